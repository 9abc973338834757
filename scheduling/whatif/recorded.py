"""What really happened in a window: each job's submission, its runs (admitted until preempted or ended) and
its size, read from the jobs and their events. The replay turns the same records into workloads, so the draft
and the history start from one reading of the database.

Which jobs: those submitted in the window, plus the context (jobs submitted before it and still running at its
start: they hold capacity, so they are replayed too, but not measured). Left out: jobs cancelled before they
ever ran (nothing to replay: the simulator has no cancellation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q

from scheduling.models import FINAL_STATES, Job, JobEvent, JobState

RUN_ENDS = {JobState.PREEMPTED, *FINAL_STATES}


@dataclass
class Run:
    instance_type: str
    start: float  # seconds from the window's start
    end: float | None  # None = still running


@dataclass
class JobRecord:
    pk: int
    name: str
    team: str
    submit: float  # seconds from the window's start (negative for context jobs)
    requests: dict[str, float]  # per pod, engine resource names
    pods: int
    priority_class: str | None
    instance_type: str | None  # requested; None = any
    expected_duration_s: int | None
    state: str
    context: bool = False
    runs: list[Run] = field(default_factory=list)
    preemptions: int = 0  # preemptions inside the window

    @property
    def accelerators(self) -> float:
        return sum(v for r, v in self.requests.items() if r not in ("cpu", "memory")) * self.pods

    @property
    def work_s(self) -> float | None:
        """How long it runs when it runs: its last run where that ended, else its expected duration."""
        if self.runs and self.runs[-1].end is not None:
            return max(self.runs[-1].end - self.runs[-1].start, 0.0)
        return float(self.expected_duration_s) if self.expected_duration_s else None


@dataclass
class History:
    start: datetime
    end: datetime
    jobs: list[JobRecord]
    left_out: int  # cancelled before they ever ran

    @property
    def length_s(self) -> float:
        return (self.end - self.start).total_seconds()


def _seconds(at: datetime, start: datetime) -> float:
    """Seconds from the window's start, to the millisecond: the database keeps microseconds, and rounding
    keeps a job that ran exactly 3600 s from ending a microsecond after something that happens at 3600."""
    return round((at - start).total_seconds(), 3)


def read_history(start: datetime, end: datetime) -> History:
    """The window's jobs with their runs, in two queries (jobs, events)."""
    jobs = (
        Job.objects.filter(submitted_at__lt=end)
        .filter(
            Q(submitted_at__gte=start)
            | Q(admitted_at__isnull=False, finished_at__isnull=True)
            | Q(finished_at__gt=start, admitted_at__isnull=False)
        )
        .select_related("team", "instance_type", "priority_class")
        .order_by("submitted_at", "pk")
    )
    records: dict[int, JobRecord] = {}
    for job in jobs:
        records[job.pk] = JobRecord(
            pk=job.pk,
            name=job.name,
            team=job.team.name,
            submit=_seconds(job.submitted_at, start),
            requests=job.requests(),
            pods=job.pods,
            priority_class=job.priority_class.name if job.priority_class_id else None,
            instance_type=job.instance_type.name if job.instance_type_id else None,
            expected_duration_s=job.expected_duration_s,
            state=job.state,
            context=job.submitted_at < start,
        )
    type_names = dict(Job.instance_type.field.related_model.objects.values_list("pk", "name"))
    assigned = dict(jobs.values_list("pk", "assigned_instance_type_id"))
    events = JobEvent.objects.filter(job_id__in=list(records), at__lt=end).order_by("job_id", "at", "pk")
    for job_id, at, to_state in events.values_list("job_id", "at", "to_state"):
        record = records[job_id]
        t = _seconds(at, start)
        if to_state == JobState.ADMITTED:
            record.runs.append(Run(type_names.get(assigned[job_id], "?"), t, None))
        elif to_state in RUN_ENDS and record.runs and record.runs[-1].end is None:
            record.runs[-1].end = t
            if to_state == JobState.PREEMPTED and t >= 0:
                record.preemptions += 1
    kept, left_out = [], 0
    for record in records.values():
        if record.context and not (record.runs and (record.runs[-1].end is None or record.runs[-1].end > 0)):
            continue  # finished before the window: not context after all
        if not record.runs and record.state == JobState.CANCELLED:
            left_out += 1
            continue
        kept.append(record)
    return History(start, end, kept, left_out)
