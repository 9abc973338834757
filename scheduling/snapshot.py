"""The database as the engine sees it: one function turns the current state into an engine Snapshot.

The admission loop, the team status shown on pages, and usage sampling all read the cluster through
here, so they agree on what "quota", "usage" and "pending" mean.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

import psycopg
from django.conf import settings
from django.db import connections
from django.db.models import Min, Sum
from django.utils import timezone

from quotas.models import ClusterPolicy, ComputeAllocation, InstanceType, PriorityClass, Team
from scheduling import engine
from scheduling.models import ACTIVE_STATES, QUEUED_STATES, Job


def lowest_priority() -> int:
    """A job without a priority class ranks below every class."""
    lowest = PriorityClass.objects.aggregate(m=Min("weight"))["m"]
    return (lowest if lowest is not None else 1) - 1


def instance_types_with_nodes() -> list[InstanceType]:
    return list(InstanceType.objects.annotate(nodes=Sum("node_groups__node_count")).order_by("name"))


def engine_instance_types(types: list[InstanceType] | None = None) -> list[engine.InstanceType]:
    """`types` from instance_types_with_nodes(), when the caller has them already."""
    types = instance_types_with_nodes() if types is None else types
    return [engine.InstanceType(name=it.name, capacity=it.capacity(), count=it.nodes or 0) for it in types]


def engine_teams(teams: list[Team] | None = None) -> list[engine.Team]:
    quotas: dict[int, dict[str, dict[str, float]]] = defaultdict(dict)
    for alloc in ComputeAllocation.objects.select_related("instance_type"):
        quotas[alloc.team_id][alloc.instance_type.name] = alloc.resolved()
    return [
        engine.Team(
            name=team.name,
            quota=quotas.get(team.pk, {}),
            cohort=team.cohort or None,
            fair_share_weight=team.fair_share_weight,
            sharing=team.sharing,
            borrow_limit_pct=team.borrow_limit_pct,
            preempt_team_tasks=team.preempt_team_tasks,
        )
        for team in (Team.objects.order_by("name") if teams is None else teams)
    ]


def engine_policy() -> engine.Policy:
    policy = ClusterPolicy.load()
    return engine.Policy(
        task_prioritization=policy.task_prioritization, idle_compute=policy.idle_compute, backfill=policy.backfill
    )


def expected_runtime_s(job) -> float | None:
    """Real seconds a job (a Job or a JobRow) is expected to run: what the engine's plan supposes. The simulated
    cluster runs jobs SIMULATED_TIME_SCALE faster than their expected duration."""
    if settings.CLUSTER_BACKEND == "simulated":
        from scheduling.backends.simulated import runtime_s

        return runtime_s(job)
    return float(job.expected_duration_s) if job.expected_duration_s else None


def job_workload(job: Job, *, lowest: int) -> engine.Workload:
    active = job.state in ACTIVE_STATES
    return engine.Workload(
        name=str(job.pk),
        team=job.team.name,
        requests=job.requests(),
        pods=job.pods,
        priority=job.priority_class.weight if job.priority_class_id else lowest,
        submit=job.submitted_at.timestamp(),
        instance_type=job.instance_type.name if job.instance_type_id else None,
        running_on=job.assigned_instance_type.name if active and job.assigned_instance_type_id else None,
        nodes=list(job.placement) if active and job.placement else None,
        admitted_at=job.admitted_at.timestamp() if active and job.admitted_at else None,
        duration=expected_runtime_s(job),
    )


JOB_RELATIONS = ("team", "instance_type", "assigned_instance_type", "priority_class")


def build_snapshot(*, now: datetime | None = None, include_queued: bool = True, jobs=None) -> engine.Snapshot:
    """The engine's view of the cluster now: inventory, teams with resolved quota, policy, and jobs.

    `jobs` may be a queryset already locked by the caller (the admission loop locks the rows it decides on).
    """
    now = now or timezone.now()
    states = ACTIVE_STATES + (QUEUED_STATES if include_queued else ())
    if jobs is None:  # plain rows: a tenth of the cost of model instances with their relations
        types, teams = instance_types_with_nodes(), list(Team.objects.order_by("name"))
        rows = load_rows(states, teams={team.pk: team.name for team in teams})
        return snapshot_from_rows(rows, now=now, lookups=RowLookups(types=types), types=types, teams=teams)
    jobs = jobs.select_related(*JOB_RELATIONS).order_by("submitted_at", "pk")
    return snapshot_from_jobs(list(jobs), now=now)


def snapshot_from_jobs(jobs: list[Job], *, now: datetime) -> engine.Snapshot:
    """The same snapshot from jobs already loaded (with JOB_RELATIONS), for callers that keep the rows."""
    lowest = lowest_priority()
    return engine.Snapshot(
        instance_types=engine_instance_types(),
        teams=engine_teams(),
        workloads=[job_workload(job, lowest=lowest) for job in jobs],
        policy=engine_policy(),
        now=now.timestamp(),
    )


# --- the admission loop's fast path: plain rows instead of model instances -------------------------------

ROW_FIELDS = (
    "pk", "name", "state", "reason", "team_id", "accelerators", "vcpus", "memory_gib", "pods", "priority_class_id",
    "submitted_at", "instance_type_id", "assigned_instance_type_id", "placement", "admitted_at",
    "expected_duration_s",
)  # fmt: skip


@dataclass(slots=True)
class JobRow:
    """The columns of a job the loop decides on; 10x cheaper to load than a Job with its relations."""

    pk: int
    name: str
    state: str
    reason: str
    team_id: int
    accelerators: int
    vcpus: float
    memory_gib: float
    pods: int
    priority_class_id: int | None
    submitted_at: datetime
    instance_type_id: int | None
    assigned_instance_type_id: int | None
    placement: list | None
    admitted_at: datetime | None
    expected_duration_s: int | None
    team_name: str = ""


def load_rows(states=None, *, ids=None, teams: dict[int, str] | None = None) -> list[JobRow]:
    """Jobs in `states` (or with primary keys `ids`) as JobRows, in queue order (submitted_at, pk)."""
    teams = teams if teams is not None else dict(Team.objects.values_list("pk", "name"))
    jobs = Job.objects.filter(state__in=states) if ids is None else Job.objects.filter(pk__in=ids)
    rows = [JobRow(*values) for values in binary_values(jobs.order_by("submitted_at", "pk"), ROW_FIELDS)]
    for row in rows:
        row.team_name = teams.get(row.team_id, "")
    return rows


MAX_BOUND_PARAMETERS = 65_535  # PostgreSQL's limit on one statement's bound parameters


def binary_values(queryset, fields) -> list[tuple]:
    """queryset.values_list(*fields), read in PostgreSQL's binary format where the database is PostgreSQL.

    Django's psycopg cursors read text, and parsing a timestamp from text costs psycopg about 3 microseconds:
    two per job made 0.11 s of the 0.13 s that reading 18,000 jobs took (bench/bounds.py); in binary the whole
    read takes 0.03 s. Same values (jsonb arrives decoded, as the JSONField would decode it; no field here has
    a custom decoder), same transaction (the connection's own), and the statement goes through Django's cursor
    wrapper as any query does (its errors, execute wrappers and query log)."""
    query = queryset.values_list(*fields)
    connection = connections[query.db]
    if connection.vendor != "postgresql":
        return list(query)
    sql, params = query.query.sql_with_params()
    if len(params) > MAX_BOUND_PARAMETERS:  # a long `pk__in`: bound on the server, PostgreSQL takes 65,535 at most
        return list(query)
    connection.ensure_connection()
    # Django's own cursors bind on the client, which is text only; this one binds on the server, and prepares
    # nothing (Django's connections set psycopg's prepare_threshold to None: poolers keep no sessions)
    raw = psycopg.Cursor(connection.connection)
    raw.format = psycopg.pq.Format.BINARY
    with connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw) as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class RowLookups:
    """What turning a JobRow into an engine Workload needs from the configuration, read once."""

    def __init__(self, *, types: list[InstanceType] | None = None):
        self.types = {it.pk: it for it in (InstanceType.objects.all() if types is None else types)}
        self.weights = dict(PriorityClass.objects.values_list("pk", "weight"))
        self.lowest = (min(self.weights.values()) if self.weights else 1) - 1  # as lowest_priority()

    def workload(self, row: JobRow) -> engine.Workload:
        """The same rules as job_workload(), from a JobRow."""
        requested = self.types.get(row.instance_type_id)
        key = (requested.accelerator_key if requested else "gpu") or "gpu"
        requests = {}
        if row.accelerators:
            requests[key] = row.accelerators
        if row.vcpus:
            requests["cpu"] = row.vcpus
        if row.memory_gib:
            requests["memory"] = row.memory_gib
        active = row.state in ACTIVE_STATES
        assigned = self.types.get(row.assigned_instance_type_id)
        return engine.Workload(
            name=str(row.pk),
            team=row.team_name,
            requests=requests,
            pods=row.pods,
            priority=self.weights.get(row.priority_class_id, self.lowest),
            submit=row.submitted_at.timestamp(),
            instance_type=requested.name if requested else None,
            running_on=assigned.name if active and assigned else None,
            nodes=list(row.placement) if active and row.placement else None,
            admitted_at=row.admitted_at.timestamp() if active and row.admitted_at else None,
            duration=expected_runtime_s(row),
        )


def snapshot_from_rows(
    rows: list[JobRow], *, now: datetime, lookups: RowLookups | None = None, types=None, teams=None
) -> engine.Snapshot:
    """The same snapshot as build_snapshot() from JobRows (same rules as job_workload, without the ORM objects).
    `types` (instance_types_with_nodes()) and `teams` (Team instances by name) save their queries."""
    lookups = lookups or RowLookups(types=types)
    return engine.Snapshot(
        instance_types=engine_instance_types(types),
        teams=engine_teams(teams),
        workloads=[lookups.workload(row) for row in rows],
        policy=engine_policy(),
        now=now.timestamp(),
    )
