"""Nobody starves, in the browser: a gang waits with its reservation shown, a short job backfills beside
it, a long one waits behind it, and the gang starts when the work its reservation waits for ends."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.loop import cluster_sync
from scheduling.models import Job, JobState
from scheduling.services import JobRequest, job_submit
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_gang_keeps_its_reservation_while_a_short_job_backfills(
    scientist, other_scientist, team_a, team_b, settings, login, page, live_server
):
    settings.SIMULATED_FAILURE_RATE = 0.0
    settings.SIMULATED_TIME_SCALE = 1.0

    def submit(name, gpus, seconds, pods=1):
        request = JobRequest(
            team="team-a", name=name, image="pytorch:2", instance_type="ml.p5.48xlarge", accelerators=gpus,
            pods=pods, expected_duration_s=seconds,
        )  # fmt: skip
        return job_submit(user=scientist, request=request)

    r1 = submit("pretrain-a", 8, 600)  # one node busy for ten minutes, the other free
    assert Job.objects.get(pk=r1.pk).state == JobState.RUNNING
    gang = submit("gang-16", 8, 600, pods=2)  # needs both nodes: reserved for when r1 ends
    short = submit("eval-short", 4, 60)
    long = submit("sweep-long", 4, 3600)
    states = dict(Job.objects.values_list("name", "state"))
    assert states["gang-16"] == states["sweep-long"] == JobState.PENDING
    assert states["eval-short"] == JobState.RUNNING  # it ends long before the reservation: backfill

    login("sam")
    page.goto(f"{live_server.url}/jobs/{gang.pk}/")
    estimate = page.get_by_test_id("estimate")
    assert estimate.get_attribute("data-kind") == "reserved"
    assert "reserved start" in estimate.inner_text().lower() and f"#{r1.pk}" in estimate.inner_text()
    assert "reserved: starts in" in page.get_by_test_id("job-reason").inner_text()
    screenshot(page, "job-reserved")

    page.goto(f"{live_server.url}/jobs/{long.pk}/")
    reason = page.get_by_test_id("job-reason").inner_text()
    assert f"would delay job #{gang.pk}'s reservation" in reason
    screenshot(page, "job-behind-reservation")

    # the work the reservation waits for ends; the cluster reports it and the gang starts
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Job.objects.filter(pk__in=[r1.pk, short.pk]).update(started_at=an_hour_ago)
    cluster_sync()
    page.goto(f"{live_server.url}/jobs/{gang.pk}/")
    page.wait_for_selector("[data-testid=job-status][data-state=running]", timeout=15_000)
    assert Job.objects.get(pk=long.pk).state == JobState.PENDING  # still behind: the gang holds both nodes
