"""The top jobs: those that used the most accelerator-hours in a range, for managers (scientists: their teams).

A job's accelerator-hours in a range are its accelerators (per pod, times pods) times the time it ran inside
the range, every run counted (a preempted job may run several times), read off its events like the per-job
report's. Jobs are read in order of what they could at most have used (accelerators x the part of the range
between submission and end), a chunk at a time, and reading stops once no job left could enter the top: over
90 days of 100,000 jobs that reads a few thousand.
"""

import heapq
from datetime import datetime, timedelta
from itertools import islice

from django.db.models import DurationField, ExpressionWrapper, F, Q, Value
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils import timezone

from scheduling.models import Job, JobEvent
from scheduling.usage.ranges import Window
from scheduling.usage.selectors import instance_type_name, run_intervals, wait_minutes

TOP = 500  # how many jobs the ranking keeps
CHUNK = 500
RELATED = ("team", "submitted_by", "instance_type", "assigned_instance_type")

FIELDS = [
    "rank",
    "job_id",
    "name",
    "team",
    "user",
    "instance_type",
    "accelerators",
    "accelerator_hours",
    "wait_minutes",
    "state",
    "submitted",
]


def bounds(window: Window, now: datetime) -> tuple[datetime, datetime]:
    """The range a ranking covers: a preset ("last 7 days") runs up to now, as the per-job report does."""
    return window.start, (window.end if window.preset == "custom" else now)


def _candidates(start, end, teams, types, now):
    jobs = Job.objects.filter(submitted_at__lt=end, accelerators__gt=0).filter(
        Q(finished_at__isnull=True) | Q(finished_at__gt=start)
    )
    if teams is not None:
        jobs = jobs.filter(team__in=teams)
    if types is not None:
        jobs = jobs.filter(
            Q(assigned_instance_type__in=types) | Q(assigned_instance_type__isnull=True, instance_type__in=types)
        )
    span = ExpressionWrapper(
        Least(Coalesce("finished_at", Value(now)), Value(end)) - Greatest("submitted_at", Value(start)),
        output_field=DurationField(),
    )
    at_most = ExpressionWrapper(span * F("accelerators") * F("pods"), output_field=DurationField())
    return jobs.annotate(at_most=at_most).order_by("-at_most", "-id").values_list("pk", "at_most")


def _hours_in(job: Job, events: list, start, end, now) -> float:
    runs = run_intervals(events, started_at=job.started_at, finished_at=job.finished_at, now=now)
    seconds = sum(max((min(b, end) - max(a, start)).total_seconds(), 0.0) for a, b in runs)
    return seconds / 3600 * job.accelerators * job.pods


def _row(job: Job, hours: float) -> dict:
    return {
        "job_id": job.pk,
        "name": job.name,
        "team": job.team.name,
        "user": job.submitted_by.username,
        "instance_type": instance_type_name(job),
        "accelerators": job.accelerators * job.pods,
        "accelerator_hours": round(hours, 2),
        "wait_minutes": wait_minutes(job),
        "state": job.state,
        "submitted": job.submitted_at,
    }


def top_jobs(*, window: Window, teams, types, top: int = TOP, now: datetime | None = None) -> list[dict]:
    """The `top` jobs by accelerator-hours used in the window, most first (ties: newest job first), ranked 1..n.
    Jobs that used nothing in the window are left out."""
    now = now or timezone.now()
    start, end = bounds(window, now)
    best: list[tuple] = []  # a min-heap of (hours, id, row)
    candidates = iter(_candidates(start, end, teams, types, now).iterator(chunk_size=CHUNK))
    while part := list(islice(candidates, CHUNK)):
        if len(best) >= top and part[0][1] <= timedelta(hours=best[0][0]):
            break  # no job from here on could have used more than the least of the top
        jobs = Job.objects.filter(pk__in=[pk for pk, _ in part]).select_related(*RELATED)
        events: dict[int, list] = {pk: [] for pk, _ in part}
        running = JobEvent.objects.filter(job_id__in=list(events)).order_by("job_id", "at", "id")
        for job_id, state, at in running.values_list("job_id", "to_state", "at"):
            events[job_id].append((state, at))
        for job in jobs:
            hours = _hours_in(job, events[job.pk], start, end, now)
            if hours <= 0:
                continue
            item = (hours, job.pk, _row(job, hours))
            if len(best) < top:
                heapq.heappush(best, item)
            elif item[:2] > best[0][:2]:
                heapq.heapreplace(best, item)
    rows = [item[2] for item in sorted(best, key=lambda item: item[:2], reverse=True)]
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    return rows
