"""Helpers for usage tests: samples, rollups and jobs with known numbers."""

from datetime import UTC, datetime, timedelta

import pytest

from scheduling.models import Job, JobEvent, JobState
from scheduling.usage.models import Granularity, UsageRollup, UsageSample

T0 = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)  # a Monday, midnight UTC


@pytest.fixture(autouse=True)
def fresh_cache():
    """Pages cache their figures for a minute; each test starts without them."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def add_sample():
    def make(team, it, at, **values):
        values.setdefault("seconds", 60)
        return UsageSample.objects.create(team=team, instance_type=it, at=at, **values)

    return make


@pytest.fixture
def add_day():
    """A daily rollup with the hours given (what the summary report reads)."""

    def make(team, it, day, *, acc_hours, borrowed=0.0, quota_hours=0.0, cpu_hours=0.0, **extra):
        within = acc_hours - borrowed
        return UsageRollup.objects.create(
            granularity=Granularity.DAY,
            team=team,
            instance_type=it,
            bucket=day,
            samples=1440,
            seconds=86400,
            acc_hours=acc_hours,
            borrowed_acc_hours=borrowed,
            quota_acc_hours=quota_hours,
            idle_quota_acc_hours=max(quota_hours - within, 0),
            cpu_hours=cpu_hours,
            used_acc=acc_hours / 24,
            **extra,
        )

    return make


@pytest.fixture
def add_job():
    """A job with its life as events: [(state, at), ...] starting from pending at submission."""

    def make(team, user, it, *, submitted, life=(), accelerators=1, pods=1, name="job", **fields):
        job = Job.objects.create(
            team=team,
            submitted_by=user,
            name=name,
            instance_type=it,
            accelerators=accelerators,
            pods=pods,
            image="img",
            submitted_at=submitted,
            **fields,
        )
        previous = JobState.PENDING
        JobEvent.objects.create(job=job, at=submitted, from_state="", to_state=JobState.PENDING, reason="submitted")
        for state, at, *reason in life:
            JobEvent.objects.create(
                job=job, at=at, from_state=previous, to_state=state, reason=reason[0] if reason else ""
            )
            previous = state
            if state == JobState.ADMITTED:
                job.admitted_at = at
                job.assigned_instance_type = it
            elif state == JobState.RUNNING:
                job.started_at = at
            elif state in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED):
                job.finished_at = at
            elif state == JobState.PREEMPTED:
                job.preemption_count += 1
            job.state = state
        job.save()
        return job

    return make


def hours(n):
    return timedelta(hours=n)
