"""The demo's past: the trace replayed through the engine, written as jobs, events, samples and rollups that
agree with each other."""

from collections import defaultdict
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db.models import Sum
from django.utils import timezone

from quotas.demo import demo_load
from scheduling.demo_history import SAMPLE_SECONDS, history_load
from scheduling.models import Job, JobEvent, JobState
from scheduling.usage.models import Granularity, UsageRollup, UsageSample

pytestmark = pytest.mark.django_db

TRANSITIONS = {
    ("", "pending"),
    ("pending", "admitted"),
    ("admitted", "running"),
    ("running", "preempted"),
    ("preempted", "pending"),
    ("running", "succeeded"),
    ("running", "failed"),
}


@pytest.fixture
def history():
    demo_load()
    now = timezone.now().replace(microsecond=0)
    return history_load(days=3, now=now), now


def test_history_writes_jobs_events_samples_and_rollups(history):
    result, now = history
    assert result["jobs"] == Job.objects.count() > 100
    assert result["events"] == JobEvent.objects.count()
    assert result["samples"] == UsageSample.objects.count() > 0
    assert UsageRollup.objects.filter(granularity=Granularity.HOUR).count() == result["hourly"] > 0
    assert UsageRollup.objects.filter(granularity=Granularity.DAY).exists()
    first, last = UsageSample.objects.order_by("at").first().at, UsageSample.objects.order_by("at").last().at
    assert now - timedelta(days=3) <= first and last <= now
    assert not Job.objects.filter(name__regex=r"-r[0-9]{5}$").exists()  # live traffic's progress is its own


def test_every_job_lives_a_legal_life_that_ends_in_its_state(history):
    lives = defaultdict(list)
    for e in JobEvent.objects.order_by("job_id", "at", "id"):
        lives[e.job_id].append(e)
    for job in Job.objects.all():
        events = lives[job.pk]
        assert [(e.from_state, e.to_state) for e in events if (e.from_state, e.to_state) not in TRANSITIONS] == []
        assert events[0].at == job.submitted_at and events[-1].to_state == job.state
        assert sum(e.to_state == JobState.PREEMPTED for e in events) == job.preemption_count
        if job.state == JobState.RUNNING:
            assert job.assigned_instance_type and job.backend_ref and job.started_at
        if job.state in (JobState.SUCCEEDED, JobState.FAILED):
            assert job.finished_at == events[-1].at and job.admitted_at <= job.finished_at


def test_samples_agree_with_the_jobs_running_at_that_moment(history):
    """The engine's usage at each sampled instant is what the written jobs had running then."""
    lives = defaultdict(list)
    for e in JobEvent.objects.order_by("at", "id").values_list("job_id", "at", "to_state"):
        lives[e[0]].append(e[1:])
    size = {j.pk: j.accelerators * j.pods for j in Job.objects.all()}
    ticks = list(UsageSample.objects.values_list("at", flat=True).distinct().order_by("at"))
    for at in ticks[:: max(1, len(ticks) // 25)]:
        running = 0
        for job_id, events in lives.items():
            state = None
            for when, to_state in events:
                if when > at:
                    break
                state = to_state
            if state == JobState.RUNNING:
                running += size[job_id]
        sampled = UsageSample.objects.filter(at=at).aggregate(n=Sum("used_acc"))["n"] or 0
        assert sampled == pytest.approx(running), at
    assert all((b - a).total_seconds() == SAMPLE_SECONDS for a, b in zip(ticks, ticks[1:], strict=False))


def test_demo_load_gives_a_fresh_database_a_past_and_keeps_an_existing_one(capsys):
    call_command("demo_load", "--days", "2")
    out = capsys.readouterr().out
    assert "demo history: 2 days replayed through the engine" in out
    jobs = Job.objects.count()
    call_command("demo_load", "--days", "2")
    assert "kept the" in capsys.readouterr().out and Job.objects.count() == jobs


def test_demo_load_refuses_a_bad_day_count():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="between 0 and 90"):
        call_command("demo_load", "--days", "400")
