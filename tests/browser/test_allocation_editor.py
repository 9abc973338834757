"""An admin types a GPU count, sees vCPUs and memory follow (computed on the server), overrides memory,
saves with a reason and finds the change in the team's history."""

import pytest
from playwright.sync_api import expect

from quotas.models import ComputeAllocation, InstanceType, NodeGroup
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def cluster(p5, team_a, team_b):
    g5 = InstanceType.objects.create(
        name="ml.g5.2xlarge", family="g5", accelerator_kind="NVIDIA A10G", accelerator_resource="gpu",
        accelerators=1, vcpus=8, memory_gib=32,
    )  # fmt: skip
    NodeGroup.objects.create(name="g5-nodes", instance_type=g5, node_count=8)
    c5 = InstanceType.objects.create(name="ml.c5.2xlarge", family="c5", vcpus=8, memory_gib=16)
    NodeGroup.objects.create(name="c5-nodes", instance_type=c5, node_count=10)
    ComputeAllocation.objects.create(team=team_b, instance_type=g5, accelerators=6)
    return {"p5": p5, "g5": g5, "c5": c5}


def test_admin_edits_an_allocation_and_finds_it_in_the_history(admin_user, team_a, cluster, login, page, live_server):
    p5 = cluster["p5"]
    login("ada")
    page.goto(f"{live_server.url}/teams/{team_a.pk}/")
    page.get_by_role("button", name="Edit allocation").click()
    expect(page.locator("h1")).to_have_text("Allocation of team-a")

    gpus, vcpus, memory = (page.locator(f"#t{p5.pk}-{f}") for f in ("accelerators", "vcpus", "memory_gib"))
    expect(vcpus).to_have_value("192")
    gpus.fill("")
    gpus.press_sequentially("4", delay=50)
    # The server's proportional default arrives while the admin is still on the GPU field.
    expect(vcpus).to_have_value("96")
    expect(memory).to_have_value("1024")
    expect(page.locator(f"#t{p5.pk}-memory_gib-mark")).to_have_text("default")
    expect(page.locator(f"#t{p5.pk}-accelerators-mark")).to_contain_text("set")
    screenshot(page, "allocation-editor")

    # Typing 20 GPUs overshoots the 16 the cluster has (team-b holds 4): a warning, not a refusal.
    gpus.fill("20")
    expect(page.locator(f"#total-{p5.pk} [data-testid=capacity-warning]")).to_be_visible()
    expect(vcpus).to_have_value("480")
    screenshot(page, "allocation-editor-over-capacity")
    gpus.fill("4")
    expect(page.locator(f"#total-{p5.pk} [data-testid=capacity-warning]")).to_have_count(0)

    memory.fill("768")
    expect(page.locator(f"#t{p5.pk}-memory_gib-mark")).to_contain_text("set")
    expect(vcpus).to_have_value("96")
    screenshot(page, "allocation-editor-override")

    page.fill("input[name=reason]", "fine-tuning sprint")
    page.get_by_role("button", name="Save allocation").click()
    expect(page.locator(".flash-success")).to_contain_text("Saved team-a's allocation")
    alloc = ComputeAllocation.objects.get(team=team_a, instance_type=p5)
    assert (alloc.accelerators, alloc.vcpus, alloc.memory_gib) == (4, None, 768)

    page.get_by_role("button", name="History").click()
    latest = page.locator("tr[data-version]").first
    expect(latest).to_contain_text("ml.p5.48xlarge GPUs: 8 → 4; memory: default (2048) → 768 GiB")
    expect(latest).to_contain_text("fine-tuning sprint")
    expect(latest).to_contain_text("ada")
    screenshot(page, "team-history")

    # One click back to the original; the revert is itself a version.
    page.get_by_test_id("revert-1").click()
    expect(page.locator(".flash-success")).to_contain_text("Reverted to version 1")
    alloc.refresh_from_db()
    assert (alloc.accelerators, alloc.memory_gib) == (8, None)


def test_admin_pages_look_right(admin_user, team_a, cluster, login, page, live_server):
    login("ada")
    for path, name in [("/teams/", "team-list"), ("/cluster/", "cluster"), ("/policy/", "policy")]:
        page.goto(f"{live_server.url}{path}")
        expect(page.locator("h1")).to_be_visible()
        screenshot(page, name)
