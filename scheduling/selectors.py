"""Reads about jobs: lists, a job's timeline, its place in the queues, its estimated start, team standing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from quotas.models import ClusterPolicy, ComputeAllocation, InstanceType, Team
from scheduling.models import ACTIVE_STATES, QUEUED_STATES, AdmissionRun, Job
from scheduling.snapshot import lowest_priority
from scheduling.status import team_statuses

ESTIMATE_METHOD = (
    "Estimated from the jobs running now: each is assumed to end when its expected duration is up, and this "
    "job starts once enough of them have ended to free its request plus the requests of the jobs ahead of it in "
    "its team's queue, on an instance type it can use. Quota limits, preemption and new higher-priority jobs can "
    "move it either way."
)


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


# --- place in the queue -----------------------------------------------------------------------------------


def _ranked_queue():
    return Job.objects.filter(state__in=QUEUED_STATES).annotate(
        rank_priority=Coalesce("priority_class__weight", Value(lowest_priority()))
    )


def _ahead_filter(job: Job, priority: int, ranking: bool) -> Q:
    earlier = Q(submitted_at__lt=job.submitted_at) | Q(submitted_at=job.submitted_at, pk__lt=job.pk)
    if not ranking:
        return earlier
    return Q(rank_priority__gt=priority) | (Q(rank_priority=priority) & earlier)


@dataclass
class QueuePlace:
    in_team: int  # 1 = next in its team's queue
    team_queued: int
    in_cluster: int
    cluster_queued: int
    order: str


def queue_place(job: Job) -> QueuePlace | None:
    """Where a waiting job stands: in its team's queue (the engine's order) and among all waiting jobs."""
    if job.state not in QUEUED_STATES:
        return None
    ranking = ClusterPolicy.load().task_prioritization == "task-ranking"
    priority = job.priority_class.weight if job.priority_class_id else lowest_priority()
    queue = _ranked_queue()
    ahead = queue.filter(_ahead_filter(job, priority, ranking))
    counts = queue.aggregate(
        team_ahead=Sum(Value(1), filter=Q(team_id=job.team_id) & _ahead_filter(job, priority, ranking)),
        team_total=Sum(Value(1), filter=Q(team_id=job.team_id)),
        total=Sum(Value(1)),
    )
    return QueuePlace(
        in_team=(counts["team_ahead"] or 0) + 1,
        team_queued=counts["team_total"] or 0,
        in_cluster=ahead.count() + 1,
        cluster_queued=counts["total"] or 0,
        order="priority, then submit time" if ranking else "submit time (first come, first served)",
    )


# --- estimated start --------------------------------------------------------------------------------------


def expected_runtime_s(job: Job) -> float | None:
    """Real seconds a job is expected to run (the simulated cluster runs them SIMULATED_TIME_SCALE faster)."""
    if settings.CLUSTER_BACKEND == "simulated":
        from scheduling.backends.simulated import runtime_s

        return runtime_s(job)
    return float(job.expected_duration_s) if job.expected_duration_s else None


def expected_end(job: Job) -> datetime | None:
    runtime = expected_runtime_s(job)
    begun = job.started_at or job.admitted_at
    if runtime is None or begun is None:
        return None
    return begun + timedelta(seconds=runtime)


def _total(job: Job, it: InstanceType) -> dict[str, float]:
    out = {}
    if job.accelerators:
        out[it.accelerator_key or "gpu"] = job.accelerators * job.pods
    if job.vcpus:
        out["cpu"] = job.vcpus * job.pods
    if job.memory_gib:
        out["memory"] = job.memory_gib * job.pods
    return out


def _candidate_types(job: Job) -> list[InstanceType]:
    if job.instance_type_id:
        return [job.instance_type]
    ids = ComputeAllocation.objects.filter(team_id=job.team_id).values("instance_type")
    return list(InstanceType.objects.filter(pk__in=ids)) or list(InstanceType.objects.all())


@dataclass
class StartEstimate:
    at: datetime | None
    note: str
    method: str = ESTIMATE_METHOD


def estimated_start(job: Job, *, now: datetime | None = None) -> StartEstimate | None:
    """When a waiting job should start, from the running jobs' expected durations (an estimate)."""
    if job.state not in QUEUED_STATES:
        return None
    now = now or timezone.now()
    place_ahead = _ranked_queue().filter(team_id=job.team_id)
    ranking = ClusterPolicy.load().task_prioritization == "task-ranking"
    priority = job.priority_class.weight if job.priority_class_id else lowest_priority()
    ahead = list(place_ahead.filter(_ahead_filter(job, priority, ranking)).select_related("instance_type"))
    best: StartEstimate | None = None
    for it in _candidate_types(job):
        estimate = _estimate_on(job, it, ahead, now)
        if estimate is not None and (best is None or estimate.at < best.at):
            best = estimate
    return best or StartEstimate(
        at=None, note="no estimate: the jobs holding the room it needs have no expected duration"
    )


def _estimate_on(job: Job, it: InstanceType, ahead: list[Job], now: datetime) -> StartEstimate | None:
    nodes = it.node_groups.aggregate(n=Sum("node_count"))["n"] or 0
    capacity = {r: v * nodes for r, v in it.capacity().items()}
    need = _total(job, it)
    for other in ahead:
        if other.instance_type_id in (None, it.pk):
            for r, v in _total(other, it).items():
                need[r] = need.get(r, 0) + v
    if any(need.get(r, 0) > capacity.get(r, 0) for r in need):
        return None
    running = list(Job.objects.filter(state__in=ACTIVE_STATES, assigned_instance_type=it))
    free = dict(capacity)
    for other in running:
        for r, v in _total(other, it).items():
            free[r] = free.get(r, 0) - v
    if all(free.get(r, 0) >= v for r, v in need.items()):
        return StartEstimate(at=now, note=f"room is free on {it.name} now; quota or fair share decides")
    ends = sorted(((expected_end(o), o) for o in running if expected_end(o) is not None), key=lambda e: e[0])
    for end, other in ends:
        for r, v in _total(other, it).items():
            free[r] = free.get(r, 0) + v
        if all(free.get(r, 0) >= v for r, v in need.items()):
            return StartEstimate(at=max(end, now), note=f"on {it.name}, when job #{other.pk} is expected to end")
    return None


# --- team standing beside the submit form -----------------------------------------------------------------


def team_panels(teams) -> list[dict]:
    """For each team: per instance type its quota, what it uses, and what it could borrow right now."""
    statuses = team_statuses()
    all_teams = {t.name: t for t in Team.objects.all()}
    capacity = {
        it.name: {r: v * (it.n or 0) for r, v in it.capacity().items()}
        for it in InstanceType.objects.annotate(n=Sum("node_groups__node_count"))
    }
    covered: dict[str, dict[str, float]] = {}
    for status in statuses.values():
        for it_name, res in status.quota.items():
            for r, v in res.items():
                covered.setdefault(it_name, {}).setdefault(r, 0.0)
                covered[it_name][r] += v
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
                    "borrowable": _borrowable(team, it_name, status, statuses, all_teams, capacity, covered),
                }
            )
        panels.append({"team": team, "rows": rows, "pending": status.pending})
    return panels


def _borrowable(team, it_name, status, statuses, all_teams, capacity, covered) -> dict[str, float]:
    """Idle quota lent by the cohort (plus capacity no quota covers), capped by the team's borrowing limit."""
    if team.sharing != "LendAndBorrow" or not team.cohort:
        return {}
    pool: dict[str, float] = {}
    for r, total in capacity.get(it_name, {}).items():
        pool[r] = max(0.0, total - covered.get(it_name, {}).get(r, 0.0))
    for name, other in statuses.items():
        peer = all_teams.get(name)
        if name == team.name or peer is None or peer.cohort != team.cohort or peer.sharing == "DontLend":
            continue
        for r, q in other.quota.get(it_name, {}).items():
            pool[r] = pool.get(r, 0.0) + max(0.0, q - other.usage.get(it_name, {}).get(r, 0.0))
    for name, other in statuses.items():  # what is already borrowed (by anyone, this team too) is gone
        peer = all_teams.get(name)
        if peer is not None and peer.cohort == team.cohort:
            for r, v in other.borrowed.get(it_name, {}).items():
                pool[r] = pool.get(r, 0.0) - v
    limit = (status.borrowing_limit or {}).get(it_name) if status.borrowing_limit is not None else None
    out = {}
    for r, v in pool.items():
        room = max(0.0, v)
        if limit is not None and r in limit:
            room = min(room, max(0.0, limit[r] - status.borrowed.get(it_name, {}).get(r, 0.0)))
        out[r] = room
    return out


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
