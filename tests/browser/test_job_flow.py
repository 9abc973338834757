"""A scientist asks for a job that must wait, sees why and where it stands, and watches it start."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from scheduling.loop import cluster_sync
from scheduling.models import Job, JobState
from scheduling.services import JobRequest, job_submit
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_waiting_job_explains_itself_and_starts_when_room_frees(
    scientist, other_scientist, team_a, team_b, settings, login, page, live_server
):
    settings.SIMULATED_FAILURE_RATE = 0.0
    common = dict(image="pytorch:2", vcpus=16, memory_gib=128, expected_duration_s=600)
    blocker = job_submit(
        user=scientist, request=JobRequest(team="team-a", name="pretrain-7b", accelerators=8, pods=2, **common)
    )
    assert Job.objects.get(pk=blocker.pk).state == JobState.RUNNING  # the whole cluster, partly borrowed
    job_submit(user=scientist, request=JobRequest(team="team-a", name="eval-sweep", accelerators=8, **common))

    login("sam")
    page.goto(f"{live_server.url}/jobs/submit/")
    assert page.get_by_test_id("team-panel-team-a").is_visible()
    page.fill("input[name=name]", "finetune-llama")
    page.select_option("select[name=instance_type]", "ml.p5.48xlarge")
    page.fill("input[name=accelerators]", "2")
    # the blank fields show what they would take (1/4 of a p5.48xlarge), and follow the count as it changes
    expect(page.locator("#id_vcpus")).to_have_attribute("placeholder", "48")
    expect(page.locator("#id_memory_gib")).to_have_attribute("placeholder", "512")
    page.fill("input[name=accelerators]", "4")
    expect(page.locator("#id_vcpus")).to_have_attribute("placeholder", "96")
    page.fill("input[name=vcpus]", "32")
    page.fill("input[name=memory_gib]", "256")
    page.fill("input[name=expected_duration]", "2h")
    screenshot(page, "job-submit-form")
    page.get_by_test_id("submit-job").click()
    page.wait_for_url("**/jobs/*/")

    status = page.get_by_test_id("job-status")
    assert status.get_attribute("data-state") == "pending"
    reason = page.get_by_test_id("job-reason").inner_text()
    assert "Pending" in reason and "waiting for the scheduler" not in reason  # the engine's own words
    assert page.get_by_test_id("team-position").inner_text().endswith("2 of 2")
    assert "≈" in page.get_by_test_id("estimate").inner_text()
    screenshot(page, "job-waiting")

    # the big job ends; the cluster reports it, the loop runs, and the page (polling) shows ours running
    Job.objects.filter(pk=blocker.pk).update(started_at=timezone.now() - timedelta(hours=1))
    cluster_sync()
    page.wait_for_selector("[data-testid=job-status][data-state=running]", timeout=15_000)
    timeline = page.get_by_test_id("timeline").inner_text()
    assert "pending → admitted" in timeline.replace("\n", " ") or "admitted" in timeline
    screenshot(page, "job-running")

    page.goto(f"{live_server.url}/jobs/")
    rows = page.locator("[data-testid=job-table] tbody tr")
    assert rows.count() == 3
    screenshot(page, "job-list")


def test_an_admin_sees_the_loops_recent_runs(users, scientist, team_a, login, page, live_server):
    job_submit(user=scientist, request=JobRequest(team="team-a", name="probe", image="pytorch:2", vcpus=4))
    login("ada")
    page.goto(f"{live_server.url}/admission-runs/")
    assert page.locator("h1").inner_text() == "Admission loop"
    assert page.locator("[data-testid=runs] tbody tr").first.inner_text().count("submit") == 1
    screenshot(page, "admission-runs")
