"""Within a minute of demo traffic the cluster shows queues, borrowing and preemptions."""

from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from quotas.demo import demo_load
from scheduling.demo_traffic import demo_traffic_step
from scheduling.loop import admission_run, cluster_sync
from scheduling.models import Job, JobState

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_a_minute_of_demo_traffic_shows_queues_borrowing_and_preemptions(settings, monkeypatch):
    settings.SIMULATED_FAILURE_RATE = 0.0
    monkeypatch.setattr("scheduling.loop._enqueue", lambda trigger, countdown=None: None)  # runs are explicit here
    demo_load()
    start = timezone.now()
    most_pending = most_borrowing = 0
    for tick in range(7):  # beat submits every 10 s: a minute of demo
        demo_traffic_step(now=start + timedelta(seconds=10 * tick))
        admission_run()
        most_pending = max(most_pending, Job.objects.filter(state=JobState.PENDING).count())
        most_borrowing = max(most_borrowing, Job.objects.filter(state=JobState.RUNNING, borrowed=True).count())
        Job.objects.filter(state=JobState.RUNNING).update(started_at=F("started_at") - timedelta(seconds=10))
        cluster_sync()  # the 10 s pass for the running jobs too
    assert most_pending > 0 and most_borrowing > 0
    assert Job.objects.filter(preemption_count__gt=0).exists()
