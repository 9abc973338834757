"""The allocation editor: proportional defaults from the server while typing, set/default marks, totals
against capacity with a warning (not a refusal), form errors that save nothing."""

import re

import pytest
from django.urls import reverse

from quotas.models import ComputeAllocation, ConfigVersion


def _preview(client, team, it, trigger, **values):
    params = {f"t{it.pk}-{k}": v for k, v in values.items()}
    url = reverse("quotas:allocation-preview", args=[team.pk])
    return client.get(
        url, {"type": it.pk, **params}, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME=f"t{it.pk}-{trigger}"
    )


def _input_value(html, name):
    match = re.search(rf'<input type="text"[^>]*id="{name}"[^>]*value="([^"]*)"', html)
    return match.group(1) if match else None


def test_typing_gpus_fills_vcpus_and_memory(client_for, admin_user, team_a, p5):
    html = _preview(
        client_for(admin_user),
        team_a,
        p5,
        "accelerators",
        accelerators="2",
        accelerators_src="default",
        vcpus="",
        vcpus_src="default",
        memory_gib="",
        memory_gib_src="default",
    ).content.decode()
    pk = p5.pk
    assert _input_value(html, f"t{pk}-vcpus") == "48"
    assert _input_value(html, f"t{pk}-memory_gib") == "512"
    # The field being typed in is not replaced under the admin's cursor, only marked "set".
    assert _input_value(html, f"t{pk}-accelerators") is None
    assert f'id="t{pk}-accelerators_src" name="t{pk}-accelerators_src" value="set"' in html
    assert f'id="t{pk}-vcpus_src" name="t{pk}-vcpus_src" value="default"' in html
    assert 'hx-swap-oob="true"' in html


def test_a_set_field_is_kept_and_the_rest_follow(client_for, admin_user, team_a, p5):
    html = _preview(
        client_for(admin_user),
        team_a,
        p5,
        "accelerators",
        accelerators="4",
        vcpus="10",
        vcpus_src="set",
        memory_gib="512",
        memory_gib_src="default",
    ).content.decode()
    assert _input_value(html, f"t{p5.pk}-memory_gib") == "1024"
    assert f'id="t{p5.pk}-vcpus_src" name="t{p5.pk}-vcpus_src" value="set"' in html
    assert _input_value(html, f"t{p5.pk}-vcpus") == "10"


def test_totals_warn_when_quota_exceeds_capacity(client_for, admin_user, team_a, team_b, p5):
    # Capacity 16 GPUs; team-b holds 4; 20 for team-a is over: a warning, not a refusal.
    html = _preview(client_for(admin_user), team_a, p5, "accelerators", accelerators="20").content.decode()
    assert "24 / 16" in html
    assert "Quota exceeds capacity on ml.p5.48xlarge" in html
    response = client_for(admin_user).post(
        reverse("quotas:allocations", args=[team_a.pk]),
        {f"t{p5.pk}-accelerators": "20", f"t{p5.pk}-accelerators_src": "set", "reason": "big run"},
        follow=True,
    )
    assert ComputeAllocation.objects.get(team=team_a).accelerators == 20
    assert "Quota exceeds capacity" in response.content.decode()


def test_non_numeric_shows_an_error_next_to_the_field(client_for, admin_user, team_a, p5):
    html = _preview(client_for(admin_user), team_a, p5, "accelerators", accelerators="lots").content.decode()
    assert "Enter a whole number." in html


def test_whole_instances_fill_everything(client_for, admin_user, team_a, p5):
    html = _preview(client_for(admin_user), team_a, p5, "instances", instances="2", accelerators="8").content.decode()
    assert _input_value(html, f"t{p5.pk}-accelerators") == "16"
    assert _input_value(html, f"t{p5.pk}-memory_gib") == "4096"
    assert "from instances" in html


def test_editor_page_marks_defaults_and_set_values(client_for, admin_user, team_a, p5):
    html = client_for(admin_user).get(reverse("quotas:allocations", args=[team_a.pk])).content.decode()
    assert _input_value(html, f"t{p5.pk}-accelerators") == "8"
    assert _input_value(html, f"t{p5.pk}-vcpus") == "192"
    assert 'hx-trigger="input changed delay:200ms"' in html
    assert html.count('data-testid="mark">default<') == 2  # vCPUs and memory
    assert html.count('data-testid="mark">set<') == 1  # GPUs


def test_save_stores_only_set_values_with_reason(client_for, admin_user, team_a, p5):
    client_for(admin_user).post(
        reverse("quotas:allocations", args=[team_a.pk]),
        {
            f"t{p5.pk}-accelerators": "16",
            f"t{p5.pk}-accelerators_src": "set",
            f"t{p5.pk}-vcpus": "384",
            f"t{p5.pk}-vcpus_src": "default",
            f"t{p5.pk}-memory_gib": "1024",
            f"t{p5.pk}-memory_gib_src": "set",
            "reason": "new project",
        },
    )
    alloc = ComputeAllocation.objects.get(team=team_a)
    assert (alloc.accelerators, alloc.vcpus, alloc.memory_gib) == (16, None, 1024)
    version = ConfigVersion.objects.filter(team=team_a).latest("number")
    assert version.changes == ["ml.p5.48xlarge GPUs: 8 → 16; memory: default (2048) → 1024 GiB"]
    assert version.reason == "new project"


@pytest.mark.parametrize("bad", ["-1", "1.5", "eight"])
def test_bad_values_are_form_errors_and_save_nothing(client_for, admin_user, team_a, p5, bad):
    response = client_for(admin_user).post(
        reverse("quotas:allocations", args=[team_a.pk]),
        {f"t{p5.pk}-accelerators": bad, f"t{p5.pk}-accelerators_src": "set"},
    )
    assert response.status_code == 200
    assert 'aria-invalid="true"' in response.content.decode()
    assert ComputeAllocation.objects.get(team=team_a).accelerators == 8
    assert not ConfigVersion.objects.exists()


def test_emptying_a_row_removes_the_allocation(client_for, admin_user, team_a, p5):
    client_for(admin_user).post(reverse("quotas:allocations", args=[team_a.pk]), {})
    assert not ComputeAllocation.objects.filter(team=team_a).exists()
