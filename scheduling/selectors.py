"""Reads about jobs: lists, a job's timeline, its place in the queues, its estimated start, team standing."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from quotas.models import ClusterPolicy
from quotas.selectors import RESOURCE_LABELS
from scheduling import engine, published
from scheduling.models import ACTIVE_STATES, QUEUED_STATES, AdmissionRun, Job
from scheduling.snapshot import build_snapshot, expected_runtime_s
from scheduling.status import page_team_statuses


def job_list(user):
    """Jobs the user may see, with what the list shows, newest first."""
    return Job.objects.visible_to(user).select_related(
        "team", "submitted_by", "instance_type", "assigned_instance_type", "priority_class"
    )


def newest_first_in_chunks(jobs, size: int = 500):
    """Jobs newest first, read `size` at a time by keyset (submitted_at, id): each query starts at once on the
    submitted_at index, where one query over every job would sort them all before the first row, and only a chunk
    is held at a time (exports of any length stream in constant memory)."""
    jobs = jobs.order_by("-submitted_at", "-id")
    last = None
    while True:
        page = (
            jobs if last is None else jobs.filter(Q(submitted_at__lt=last[0]) | Q(submitted_at=last[0], id__lt=last[1]))
        )
        chunk = list(page[:size])
        yield from chunk
        if len(chunk) < size:
            return
        last = (chunk[-1].submitted_at, chunk[-1].pk)


def job_detail(user, pk) -> Job | None:
    if not str(pk).isdigit():
        return None
    return job_list(user).filter(pk=pk).first()


def job_events(job: Job):
    return list(job.events.all())


# --- place in the queue and start time: read off the engine's plan ---------------------------------------

ESTIMATE_METHOD = (
    "From the scheduler's own plan: every running job is supposed to end when its expected duration is up; "
    "the first job of each team's queue holds a reservation (the earliest time it fits without preempting "
    "anyone, after the reservations of heads before it in planning order: higher priority, then earlier "
    "submit); later jobs are estimated after those reservations and the jobs ahead of them in their team's "
    "queue. Preemption, cancellations and jobs that end early can move it."
)


@dataclass
class QueuePlace:
    in_team: int  # 1 = next in its team's queue
    team_queued: int
    in_cluster: int  # place in the engine's planning order (priority, then submit time)
    cluster_queued: int
    order: str


@dataclass
class StartEstimate:
    at: datetime | None
    note: str
    kind: str = "estimate"  # "reserved" | "estimate" | "now" | "unknown"
    waits_for: list[int] = field(default_factory=list)
    method: str = ESTIMATE_METHOD


@dataclass
class JobPlan:
    place: QueuePlace | None
    estimate: StartEstimate | None


def _when(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.get_current_timezone())


def _job_list_text(names: list[str]) -> str:
    labels = [f"#{n}" for n in names[:4]] + ([f"{len(names) - 4} more"] if len(names) > 4 else [])
    return "job " + labels[0] if len(labels) == 1 else "jobs " + ", ".join(labels[:-1]) + " and " + labels[-1]


def job_plan(job: Job, *, now: datetime | None = None) -> JobPlan:
    """Where a waiting job stands in the engine's plan: its place in its team's queue and in planning order,
    and its start: reserved (a team's head) or estimated from the same plan. Read from the plan the scheduler
    published (scheduling/published.py); where none current has it, one engine call decides all, as the
    scheduler would, and is published for the pages after this one."""
    if job.state not in QUEUED_STATES:
        return JobPlan(None, None)
    ranking = ClusterPolicy.load().task_prioritization == "task-ranking"
    order = "priority, then submit time" if ranking else "submit time (first come, first served)"
    found = published.job_in_plan(job)
    if found is None:
        decisions = published.page_standing(estimate=(str(job.pk),), now=now)
        plan = decisions.plans.get(str(job.pk))
        if plan is None:
            free = "room is free for it now: it starts at the next scheduling pass"
            return JobPlan(None, StartEstimate(at=now or timezone.now(), kind="now", note=free))
        queued = decisions.teams[job.team.name].pending if job.team.name in decisions.teams else 0
        found = published.JobInPlan(plan, queued, len(decisions.plans))
    place = QueuePlace(
        in_team=found.plan.team_rank,
        team_queued=found.team_queued,
        in_cluster=found.plan.rank,
        cluster_queued=found.cluster_queued,
        order=order,
    )
    return JobPlan(place, _estimate(found.plan))


def _estimate(plan: engine.Plan) -> StartEstimate:
    if plan.planned_start is not None:
        at = _when(plan.planned_start)
        when = f"when {_job_list_text(plan.waits_for)} end" if plan.waits_for else "as soon as the room is free"
        if len(plan.waits_for) == 1:
            when = f"when {_job_list_text(plan.waits_for)} ends"
        return StartEstimate(
            at=at,
            kind="reserved",
            waits_for=[int(n) for n in plan.waits_for if n.isdigit()],
            note=f"reserved: starts at {at:%H:%M:%S} on {plan.instance_type}, {when}",
        )
    if plan.estimated_start is not None:
        at = _when(plan.estimated_start)
        return StartEstimate(
            at=at,
            note=f"estimate: about {at:%H:%M:%S} on {plan.instance_type}, after the reservations ahead of it",
        )
    if plan.head:
        return StartEstimate(
            at=None,
            kind="unknown",
            note=(
                "no reservation: the plan finds no time it could start as things stand (it asks for more than"
                " its team may ever use, or the room it needs is held by work with no expected duration; the"
                " reason says which)"
            ),
        )
    return StartEstimate(
        at=None,
        kind="unknown",
        note="no estimate: jobs ahead of it, or holding the room it needs, have no expected duration",
    )


@dataclass
class QueuedStart:
    job: Job
    rank: int
    team_rank: int
    estimate: StartEstimate


def queue_starts(user, *, limit: int = 50, now: datetime | None = None) -> list[QueuedStart]:
    """The user's visible waiting jobs in the scheduler's order with their start times, like Slurm's
    `squeue --start`: one engine call plans everything and estimates the listed jobs."""
    now = now or timezone.now()
    snapshot = build_snapshot(now=now)
    visible = {
        str(j.pk): j
        for j in job_list(user).filter(state__in=QUEUED_STATES).order_by("submitted_at", "pk")[: max(limit, 0) * 4]
    }
    decisions = engine.standing(snapshot, estimate=tuple(visible)[: max(limit, 0)])
    rows = [
        QueuedStart(visible[name], plan.rank, plan.team_rank, _estimate(plan))
        for name, plan in decisions.plans.items()
        if name in visible
    ]
    rows.sort(key=lambda row: row.rank)
    return rows[:limit]


def queue_place(job: Job) -> QueuePlace | None:
    return job_plan(job).place


def estimated_start(job: Job, *, now: datetime | None = None) -> StartEstimate | None:
    return job_plan(job, now=now).estimate


def expected_end(job: Job) -> datetime | None:
    runtime = expected_runtime_s(job)
    begun = job.started_at or job.admitted_at
    if runtime is None or begun is None:
        return None
    return begun + timedelta(seconds=runtime)


# --- team standing beside the submit form -----------------------------------------------------------------


def team_panels(teams) -> list[dict]:
    """For each team: per instance type its quota, what it uses, and what it could borrow right now (the
    engine's figure: remaining borrowing limit capped by what the cohort has idle)."""
    teams = list(teams)
    statuses = page_team_statuses([team.name for team in teams])
    panels = []
    for team in teams:
        status = statuses.get(team.name)
        if status is None:
            continue
        rows = []
        for it_name in sorted(set(status.quota) | set(status.usage)):
            rows.append(
                {
                    "instance_type": it_name,
                    "quota": status.quota.get(it_name, {}),
                    "usage": status.usage.get(it_name, {}),
                    "borrowed": status.borrowed.get(it_name, {}),
                    "borrowable": status.borrowable.get(it_name, {}),
                }
            )
        panels.append({"team": team, "rows": rows, "pending": status.pending})
    return panels


def admission_runs(limit: int | None = 100):
    runs = AdmissionRun.objects.all()
    return runs if limit is None else runs[:limit]


def admission_run_summary(last: int = 1000) -> dict:
    """Over the latest `last` runs: how many, how many failed, and the 95th percentile of their duration."""
    rows = list(AdmissionRun.objects.order_by("-started_at").values_list("duration_ms", "error")[:last])
    durations = sorted(d for d, _ in rows if d is not None)
    return {
        "summary_runs": len(rows),
        "failed": sum(1 for _, error in rows if error),
        "p95": durations[int(0.95 * (len(durations) - 1))] if durations else None,
    }


@dataclass
class Borrowing:
    """What one running job borrows now, of its whole size, in the unit of its instance type's resource."""

    amount: float
    size: float
    unit: str


def borrowing_now(team_names) -> dict[int, Borrowing]:
    """What the running jobs of the named teams borrow now, by job id (jobs that borrow nothing are absent).

    A team borrows per instance type (its standing, as the team list shows it: usage beyond its quota there);
    which of its jobs that is, is this one rule: the most recently admitted first, the work the cluster takes
    back first. So a team's badges add up to what it borrows, and a job admitted on borrowed quota whose team
    is back within its quota borrows nothing now (Job.borrowed only says how the job was admitted)."""
    standings = page_team_statuses(sorted(set(team_names)))
    left = {
        (team, it_name): dict(resources)
        for team, standing in standings.items()
        for it_name, resources in (standing.borrowed or {}).items()
    }
    if not left:
        return {}
    out: dict[int, Borrowing] = {}
    running = (
        Job.objects.filter(team__name__in=list(standings), state__in=ACTIVE_STATES)
        .exclude(assigned_instance_type=None)
        .order_by("-admitted_at", "-pk")
        .values_list(
            "pk",
            "team__name",
            "assigned_instance_type__name",
            "assigned_instance_type__accelerator_resource",
            "accelerators",
            "vcpus",
            "pods",
        )
    )
    for pk, team, it_name, resource, accelerators, vcpus, pods in running:
        borrowed = left.get((team, it_name))
        if not borrowed:
            continue
        resource, size = (resource, accelerators * pods) if resource and accelerators else ("cpu", vcpus * pods)
        amount = min(borrowed.get(resource, 0.0), size)
        if amount > 1e-9:
            borrowed[resource] -= amount
            out[pk] = Borrowing(amount=amount, size=size, unit=RESOURCE_LABELS[resource])
    return out
