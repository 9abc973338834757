"""Writes on jobs: submit, cancel, clone, and the one place a job changes state (with its event).

Every service checks who is asking (the same visibility rule as the pages) and validates the whole request
before writing anything, inside one transaction. The admission loop is asked to run once the change commits.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.utils import timezone

from quotas.models import ComputeAllocation, InstanceType, NodeGroup, PriorityClass, Team, k8s_name_validator
from scheduling import engine
from scheduling.engine import bounds
from scheduling.loop import admission_request
from scheduling.models import ACTIVE_STATES, FINAL_STATES, Job, JobEvent, JobState, image_validator

__all__ = ["JobNotFound", "JobRequest", "admission_request", "job_cancel", "job_for_user", "job_submit"]

MAX_PODS = bounds.MAX_PODS_PER_JOB
MAX_DURATION_S = bounds.MAX_DURATION_S
SIZE_LIMITS = {
    "accelerators": (bounds.MAX_ACCELERATORS_PER_NODE, True),
    "vcpus": (bounds.MAX_VCPUS_PER_NODE, False),
    "memory_gib": (bounds.MAX_MEMORY_GIB_PER_NODE, False),
}


class JobNotFound(Exception):
    """The job does not exist or the user may not see it (the two are deliberately indistinguishable)."""


@dataclass
class JobRequest:
    """What a scientist asks for; names (not objects) so the form, API and command share one validation."""

    team: str
    name: str
    image: str
    instance_type: str | None = None  # None or "" = any type the team has quota on
    accelerators: int = 0
    vcpus: float | None = None  # None = the instance type's proportional default per pod
    memory_gib: float | None = None
    pods: int = 1
    priority_class: str | None = None
    command: str = ""
    expected_duration_s: int | None = None


def record_transition(job: Job, to_state: str, reason: str, *, at=None) -> JobEvent:
    """Build (not save) the event for a state change and update the job in memory."""
    at = at or timezone.now()
    event = JobEvent(job=job, at=at, from_state=job.state, to_state=to_state, reason=reason)
    job.state = to_state
    job.reason = reason
    return event


def _resolve(request: JobRequest, user):
    errors: dict[str, list[str]] = {}

    def err(field, message):
        errors.setdefault(field, []).append(message)

    team = _team_for_submit(request.team, user) if request.team else None
    if not request.team:
        err("team", "choose a team")
    elif team is None:
        err("team", f"unknown team {request.team!r}")
    elif not user.is_portal_admin and not team.is_member:
        err("team", f"you are not a member of {team.name}; only its members submit jobs for it")

    instance_type = None
    types = _instance_types_with_nodes()
    if request.instance_type:
        instance_type = next((it for it in types if it.name == request.instance_type), None)
        if instance_type is None:
            err("instance_type", f"unknown instance type {request.instance_type!r}")

    priority_class = None
    if request.priority_class:
        priority_class = _priority_class(request.priority_class)
        if priority_class is None:
            known = ", ".join(PriorityClass.objects.values_list("name", flat=True)) or "none defined"
            err("priority_class", f"unknown priority class {request.priority_class!r} (known: {known})")

    try:
        k8s_name_validator(request.name or "")
    except ValidationError as exc:
        err("name", f"job name {exc.messages[0]}")
    if not (request.image or "").strip():
        err("image", "give the container image to run, e.g. nvcr.io/nvidia/pytorch:24.05-py3")
    else:
        try:
            image_validator(request.image.strip())
        except ValidationError as exc:
            err("image", exc.messages[0])

    _fill_defaults(request, team, instance_type, types)
    _check_sizes(request, instance_type, types, err)
    if errors:
        raise ValidationError(errors)
    return team, instance_type, priority_class


# The three reads of a submit, written out: the ORM spent 0.4-1 ms of CPU compiling each of them, about 70 % of
# a submit's CPU (bench/live_loop.py, 4.6 ms a submit), far more than the database took to answer them.


def _read(model, sql: str, params=(), *, extra=()) -> list:
    """Instances of `model` from `sql`, which selects the model's columns (`_columns(model, alias)`) and then
    the `extra` values, set as attributes of the same names. Model.from_db, as the ORM does, without compiling
    a query. The models read here need no value converters (plain numbers, text and timestamps)."""
    names = [f.attname for f in model._meta.concrete_fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    out = []
    for row in rows:
        obj = model.from_db(connection.alias, names, row[: len(names)])
        for name, value in zip(extra, row[len(names) :], strict=True):
            setattr(obj, name, value)
        out.append(obj)
    return out


def _columns(model, alias: str) -> str:
    return ", ".join(f'{alias}."{f.column}"' for f in model._meta.concrete_fields)


def _team_for_submit(name: str, user) -> Team | None:
    """The team called `name` if `user` may see it (the rule of Team.objects.visible_to: admins and managers see
    every team, scientists the teams they are members of), with `is_member` and `home_type_id` (the first
    instance type it has quota on) read in the same statement."""
    if not user.is_authenticated:
        return None
    t, m, a = Team._meta.db_table, Team.members.through._meta.db_table, ComputeAllocation._meta.db_table
    sql = (
        f"SELECT {_columns(Team, 't')},"
        f' EXISTS (SELECT 1 FROM "{m}" m WHERE m.team_id = t.id AND m.user_id = %s),'
        f' (SELECT a.instance_type_id FROM "{a}" a WHERE a.team_id = t.id ORDER BY a.id LIMIT 1)'
        f' FROM "{t}" t WHERE t.name = %s'
    )
    team = next(iter(_read(Team, sql, [user.pk, name], extra=("is_member", "home_type_id"))), None)
    if team is None or not (user.sees_all_teams or team.is_member):
        return None
    return team


def _instance_types_with_nodes() -> list[InstanceType]:
    """Every instance type by name, with `nodes`: its node groups' node count (None without node groups)."""
    it, ng = InstanceType._meta.db_table, NodeGroup._meta.db_table
    sql = (
        f"SELECT {_columns(InstanceType, 'it')},"
        f' (SELECT sum(ng.node_count) FROM "{ng}" ng WHERE ng.instance_type_id = it.id)'
        f' FROM "{it}" it ORDER BY it.name'
    )
    return _read(InstanceType, sql, extra=("nodes",))


def _priority_class(name: str) -> PriorityClass | None:
    sql = f'SELECT {_columns(PriorityClass, "p")} FROM "{PriorityClass._meta.db_table}" p WHERE p.name = %s'
    return next(iter(_read(PriorityClass, sql, [name])), None)


def size_defaults(*, user, team: str, instance_type: str, accelerators) -> tuple[float, float, str] | None:
    """The per-pod vCPUs and memory a request would get if left blank, and the instance type they come from:
    what the submit form shows while the user types (the same rule as submitting, not a copy)."""
    try:
        count = max(0, min(int(accelerators or 0), bounds.MAX_ACCELERATORS_PER_NODE))
    except (TypeError, ValueError):
        return None
    types = list(InstanceType.objects.all())
    chosen = next((t for t in types if t.name == instance_type), None)
    team_row = Team.objects.visible_to(user).filter(name=team).first() if team else None
    request = JobRequest(team=team or "", name="", image="", accelerators=count)
    it = _fill_defaults(request, team_row, chosen, types)
    if it is None or (it.accelerators and count > it.accelerators):
        return None  # more accelerators than a node of the type has: the request is refused, no default to show
    return (request.vcpus, request.memory_gib, it.name)


def _home_type(team, types: list[InstanceType]):
    if team is not None and hasattr(team, "home_type_id"):
        first = team.home_type_id  # read with the team (_team_for_submit)
    else:
        first = team.allocations.order_by("pk").values_list("instance_type_id", flat=True).first() if team else None
    return next((t for t in types if t.pk == first), None) or next(iter(types), None)


def _fill_defaults(request: JobRequest, team, instance_type, types: list[InstanceType]) -> InstanceType | None:
    """vCPUs and memory not given get the proportional per-pod default of the instance type the job asks for
    (else the first its team has quota on): the engine's own function, as the allocation editor uses.
    1 of a p5.48xlarge's 8 GPUs gives 24 vCPUs and 256 GiB. Never 0 when accelerators are asked for.
    Returns the instance type the defaults come from (the one asked for where nothing was left blank)."""
    if request.vcpus is not None and request.memory_gib is not None:
        return instance_type
    it = instance_type or _home_type(team, types)
    given = {}
    if it is not None and request.accelerators and it.accelerator_key:
        given[it.accelerator_key] = request.accelerators
    for resource, value in (("cpu", request.vcpus), ("memory", request.memory_gib)):
        if value is not None:
            given[resource] = value
    filled = engine.proportional_defaults(it.capacity(), given) if it is not None and given else {}
    if request.vcpus is None:
        request.vcpus = round(filled.get("cpu", 0.0), 3)
    if request.memory_gib is None:
        request.memory_gib = round(filled.get("memory", 0.0), 3)
    return it


def _check_sizes(request: JobRequest, instance_type, types: list[InstanceType], err) -> None:
    sizes = {"accelerators": request.accelerators, "vcpus": request.vcpus, "memory_gib": request.memory_gib}
    for field, value in sizes.items():
        maximum, whole = SIZE_LIMITS[field]
        problem = bounds.quantity_problem(value, maximum, whole=whole) if value is not None else "must be a number"
        if problem:
            err(field, f"{problem} per pod" if "at most" in problem else problem)
            return
    if request.pods is None or request.pods < 1 or request.pods > MAX_PODS:
        err("pods", f"must be between 1 and {MAX_PODS:,}")
        return
    if request.expected_duration_s is not None and not (0 < request.expected_duration_s <= MAX_DURATION_S):
        err("expected_duration_s", f"must be between 1 second and {MAX_DURATION_S // 86400} days")
    if not (request.accelerators or request.vcpus or request.memory_gib):
        err("__all__", "ask for some resources: accelerators, vCPUs or memory per pod")
        return
    candidates = [instance_type] if instance_type else types
    if not candidates:
        err("instance_type", "the cluster has no instance types yet")
        return
    fits = [it for it in candidates if _pod_fits(request, it)]
    if not fits:
        if instance_type is not None:
            err("__all__", _why_not(request, instance_type))
        else:
            most = max(it.accelerators for it in candidates)
            err(
                "__all__",
                f"no instance type can hold one pod of this size (the largest has {most} accelerators, "
                f"{max(it.vcpus for it in candidates)} vCPUs, {max(it.memory_gib for it in candidates)} GiB); "
                "split the work over more pods",
            )
        return
    if not any(request.pods <= (it.nodes or 0) * _pods_per_node(request, it) for it in fits):
        err("pods", f"{request.pods} pods of this size are more than the whole cluster can run at once")


def _pod_fits(request: JobRequest, it: InstanceType) -> bool:
    return request.accelerators <= it.accelerators and request.vcpus <= it.vcpus and request.memory_gib <= it.memory_gib


def _pods_per_node(request: JobRequest, it: InstanceType) -> int:
    limits = [
        it.accelerators // request.accelerators if request.accelerators else None,
        int(it.vcpus // request.vcpus) if request.vcpus else None,
        int(it.memory_gib // request.memory_gib) if request.memory_gib else None,
    ]
    return min(x for x in limits if x is not None)


def _why_not(request: JobRequest, it: InstanceType) -> str:
    if request.accelerators > it.accelerators:
        if not it.accelerators:
            return f"{it.name} has no accelerators; choose a GPU or Neuron instance type"
        return (
            f"{request.accelerators} accelerators per pod is more than {it.name} has ({it.accelerators}); use more pods"
        )
    if request.vcpus > it.vcpus:
        return f"{request.vcpus:g} vCPUs per pod is more than {it.name} has ({it.vcpus})"
    return f"{request.memory_gib:g} GiB per pod is more than {it.name} has ({it.memory_gib} GiB)"


def job_submit(*, user, request: JobRequest, cloned_from: Job | None = None) -> Job:
    """Validate a request completely, then store the job as pending with its first event (one transaction)."""
    with transaction.atomic():
        team, instance_type, priority_class = _resolve(request, user)
        job = Job(
            team=team,
            submitted_by=user,
            name=request.name,
            instance_type=instance_type,
            accelerators=request.accelerators,
            vcpus=request.vcpus,
            memory_gib=request.memory_gib,
            pods=request.pods,
            priority_class=priority_class,
            image=request.image.strip(),
            command=request.command or "",
            expected_duration_s=request.expected_duration_s,
            cloned_from=cloned_from,
            reason="waiting for the scheduler's next pass",
        )
        # the related objects were resolved above; skip re-checking each by another query
        job.full_clean(exclude=["team", "submitted_by", "instance_type", "priority_class", "cloned_from"])
        origin = f" (resubmission of #{cloned_from.pk})" if cloned_from else ""
        reason = f"submitted by {user}{origin}"
        if connection.vendor == "postgresql":
            _insert_with_first_event(job, reason)
        else:
            job.save()
            JobEvent.objects.create(job=job, at=job.submitted_at, to_state=JobState.PENDING, reason=reason)
        admission_request("submit")
    return job


def _insert_with_first_event(job: Job, reason: str) -> None:
    """INSERT the job and its first event (pending, at its submit time) in one statement on PostgreSQL: the
    event takes the job's id from the job's RETURNING. Values are prepared by each field, as Model.save does."""
    fields = [f for f in Job._meta.concrete_fields if not f.primary_key]
    values = [f.get_db_prep_save(f.pre_save(job, True), connection) for f in fields]
    columns = ", ".join(f'"{f.column}"' for f in fields)
    sql = (
        f'WITH j AS (INSERT INTO "{Job._meta.db_table}" ({columns}) VALUES ({", ".join(["%s"] * len(fields))})'
        ' RETURNING "id")'
        f' INSERT INTO "{JobEvent._meta.db_table}" ("job_id", "at", "from_state", "to_state", "reason")'
        ' SELECT j."id", %s, %s, %s, %s FROM j RETURNING "job_id"'
    )
    at = JobEvent._meta.get_field("at").get_db_prep_save(job.submitted_at, connection)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*values, at, "", JobState.PENDING.value, reason])
        job.pk = cursor.fetchone()[0]
    job._state.adding, job._state.db = False, connection.alias


def job_for_user(*, user, pk) -> Job:
    """A job the user may see, or JobNotFound (never a hint that it exists)."""
    job = Job.objects.visible_to(user).filter(pk=pk).first() if str(pk).isascii() and str(pk).isdigit() else None
    if job is None:
        raise JobNotFound(f"no job #{pk}")
    return job


def can_change(user, job: Job) -> bool:
    """Scientists change their teams' jobs, admins any; managers only read."""
    if user.is_portal_admin:
        return True
    return not user.is_manager and job.team.members.filter(pk=user.pk).exists()


def job_cancel(*, user, pk, reason: str = "") -> Job:
    """Cancel a queued or running job. The cluster is told after the change commits."""
    from scheduling.loop import stop_on_cluster

    with transaction.atomic():
        job = job_for_user(user=user, pk=pk)
        job = Job.objects.select_for_update().get(pk=job.pk)
        if not can_change(user, job):
            raise PermissionDenied("managers read jobs but do not cancel them")
        if job.state in FINAL_STATES:
            raise ValidationError(f"job #{job.pk} already {job.state}; nothing to cancel")
        # A job that ever reached the cluster may have left something there: running pods, or the Job a
        # preemption suspended (Kubernetes) or one waiting in Kueue's queue. Deleting is idempotent.
        on_cluster = job.state in ACTIVE_STATES or job.preemption_count > 0 or bool(job.backend_ref)
        event = record_transition(job, JobState.CANCELLED, reason or f"cancelled by {user}")
        job.finished_at = event.at
        job.backend_stop_pending = on_cluster
        job.save(update_fields=["state", "reason", "finished_at", "backend_stop_pending"])
        event.save()
        if on_cluster:
            transaction.on_commit(lambda: stop_on_cluster([job.pk], reason="cancelled", preempted=False))
        admission_request("cancel")
    return job


def job_request_from(job: Job, **changes) -> JobRequest:
    """A request that repeats a job (resubmit / clone), with optional changes."""
    values = dict(
        team=job.team.name,
        name=job.name,
        image=job.image,
        instance_type=job.instance_type.name if job.instance_type_id else None,
        accelerators=job.accelerators,
        vcpus=job.vcpus,
        memory_gib=job.memory_gib,
        pods=job.pods,
        priority_class=job.priority_class.name if job.priority_class_id else None,
        command=job.command,
        expected_duration_s=job.expected_duration_s,
    )
    values.update(changes)
    return JobRequest(**values)
