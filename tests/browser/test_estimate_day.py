"""A start days away shows its day, not only a time of day that reads as today ("≈ 13:52:34 (1 week, 5 days from
now)" was the demo's job page)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.models import Job, JobState
from scheduling.services import JobRequest, job_submit
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_start_on_another_day_names_the_day(scientist, team_a, team_b, settings, login, page, live_server):
    settings.SIMULATED_FAILURE_RATE = 0.0
    common = dict(image="pytorch:2", vcpus=16, memory_gib=128)
    blocker = job_submit(
        user=scientist,
        request=JobRequest(
            team="team-a", name="pretrain-long", accelerators=8, pods=2, expected_duration_s=3 * 86400, **common
        ),
    )
    assert Job.objects.get(pk=blocker.pk).state == JobState.RUNNING  # the whole cluster, for three days
    waiting = job_submit(
        user=scientist,
        request=JobRequest(team="team-a", name="eval", accelerators=8, expected_duration_s=600, **common),
    )

    login("sam")
    page.goto(f"{live_server.url}/jobs/{waiting.pk}/")
    estimate = page.get_by_test_id("estimate")
    assert estimate.is_visible()
    day = page.get_by_test_id("estimate-day")
    assert day.is_visible(), estimate.inner_text()
    expected = timezone.localtime(timezone.now() + timedelta(days=3))
    assert expected.strftime("%b ") + str(expected.day) in day.inner_text()
    screenshot(page, "job-estimate-other-day")
