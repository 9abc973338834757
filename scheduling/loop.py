"""The admission loop: read the cluster from the database, ask the engine, apply its decisions in one
transaction, then tell the cluster backend to start and stop jobs.

Safe with several workers: on PostgreSQL each run holds a transaction-scoped advisory lock, so runs are
serialized and no two admit against the same free capacity; on SQLite the IMMEDIATE transaction mode takes
the one write lock up front. Every write to a job's state is conditional on the state the run read, so a
job cancelled or finished by someone else meanwhile is never overwritten. A run that fails rolls back whole
and is recorded with its error; the next run redoes the work.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import F
from django.utils import timezone

from quotas.models import InstanceType
from scheduling import engine, published
from scheduling.backends import get_backend
from scheduling.backends.base import ClusterUnreachable
from scheduling.engine.collector import collector_paused
from scheduling.models import ACTIVE_STATES, QUEUED_STATES, AdmissionRun, Job, JobEvent, JobState
from scheduling.snapshot import JobRow, binary_values, load_rows, snapshot_from_rows

log = logging.getLogger(__name__)

LOCK_KEY = 0x6A6F6273  # "jobs": the advisory lock every admission run holds
UNREACHABLE = "cluster unreachable; the portal retries on its next pass"
PREEMPTION_WHY = {
    "reclaim": "to reclaim quota that this job's team had borrowed",
    "fair-share": "to bring the teams back to their fair shares",
    "priority": "because it has a higher priority",
}
RUN_HISTORY = timedelta(days=1)


# --- asking for a run -------------------------------------------------------------------------------------


def admission_request(trigger: str) -> None:
    """Ask for an admission run once the current transaction commits (at once outside a transaction).

    Called after every submit, finish, cancel and allocation change. Requests that arrive while one is
    already queued are folded into it (a Redis flag), so a burst of submits costs one run, not hundreds.
    With ADMISSION_SCHEDULER = "process" the request wakes the scheduler process (`manage.py scheduler`,
    scheduling/warm.py) instead of queueing a Celery task; without Redis that process polls.
    """
    if settings.ADMISSION_SCHEDULER == "process" and not settings.CELERY_TASK_ALWAYS_EAGER:
        transaction.on_commit(lambda: wake_scheduler(trigger))
    else:
        transaction.on_commit(lambda: _enqueue(trigger))


WAKE_LIST = "portal:scheduler:wake"
WAKE_FLAG = "portal:scheduler:woken"
UNFOLDED_TRIGGERS = ("config", "cluster")  # the scheduler acts on these by name: never folded into another


def wake_scheduler(trigger: str) -> None:
    """Wake the scheduler process. Submits fold into one pending wake-up; a configuration change (re-read
    everything) and a cluster wake-up (observe the cluster) always get their own."""
    client = _redis_client()
    if client is None:
        return  # the scheduler polls
    try:
        if trigger.startswith(UNFOLDED_TRIGGERS) or client.set(WAKE_FLAG, 1, nx=True, ex=30):
            client.lpush(WAKE_LIST, trigger)
    except Exception:
        log.warning("could not wake the scheduler (%s); it polls every second", trigger)


def wait_for_wake(timeout: float) -> list[str]:
    """The scheduler's side: block until woken (or `timeout`, or the next cluster wake-up this process serves
    itself), then take every trigger waiting. A cluster wake-up that fell due adds the trigger "cluster".

    Redis times a blocked BLPOP out only on its own clock tick (every 100 ms at the default hz of 10), so the
    wait is never timed by Redis to meet a wake-up: this process's alarm clock (a thread) ends it at the
    instant one falls due, also one registered while the wait is under way (the carrier thread starts jobs
    whose ends come sooner than the wait would last). Before, every end was served 0-100 ms late, and one
    registered during a wait only at the wait's timeout (up to a second of a quiet cluster running idle)."""
    end = time.time() + timeout
    client = _redis_client()
    if client is None:
        end = min(end, time.time() + POLL_WITHOUT_REDIS_S)  # no wake-ups from others: poll the database
    while True:
        _arm(ring_redis=client is not None)
        left = end - time.time()
        if wake_up_due() or left < ALARM_SLACK_S:  # due now: take what is waiting without blocking
            got = None
        elif client is None:
            _rearm.wait(left)
            got = None
        else:
            got = client.blpop([WAKE_LIST], timeout=left)
        _disarm()
        triggers = []
        if client is not None and (got is not None or _next_alarm() is not None):
            with client.pipeline() as pipe:  # MULTI: the flag goes with the list, so a later request wakes again
                pipe.delete(WAKE_FLAG).lrange(WAKE_LIST, 0, -1).delete(WAKE_LIST)
                _, rest, _ = pipe.execute()
            triggers = [got[1].decode()] if got is not None else []
            triggers = [t for t in triggers + [t.decode() for t in rest] if t != REARM]
        if _take_due_alarms():
            triggers.append("cluster")
        if triggers or time.time() >= end - ALARM_SLACK_S:
            return triggers


def sleep_unless_due(seconds: float) -> bool:
    """Sleep up to `seconds`, but no later than the next cluster wake-up this process serves (also one that is
    registered meanwhile). True if one fell due (it stays to be taken by wait_for_wake)."""
    _arm(ring_redis=False)
    try:
        if not wake_up_due():
            _rearm.wait(seconds)
    finally:
        _disarm()
    return wake_up_due()


POLL_WITHOUT_REDIS_S = 0.5
ALARM_SLACK_S = 0.001  # a wake-up due this soon is served at once (the clock wakes within a fraction of it)
REARM = "rearm"  # pushed on the wake list by the alarm clock only to end a wait (never a pass of its own)

# Cluster wake-ups served in this process: the scheduler process starts jobs itself (its carrier thread), so
# the simulated cluster's wake-up at a job's end becomes a deadline of the scheduler's own wait instead of a
# Celery task that a worker runs only to wake the scheduler through Redis (one hop, one task per end, and a
# wait behind whatever else that worker runs). None: this process does not serve them (web, workers).
_alarms: list[float] | None = None
_alarms_lock = threading.Lock()
_alarm_changed = threading.Condition(_alarms_lock)  # the clock re-reads the alarms and the wait
_waiting = 0  # the scheduler's current wait (a number per wait), 0 when it is not waiting
_waits = 0
_rung = 0  # the wait the clock last ended
_ring_redis = False  # end the current wait through Redis (it blocks in BLPOP) as well as locally
_rearm = threading.Event()  # set by the clock when a wake-up falls due during a wait


def _arm(*, ring_redis: bool) -> None:
    """A wait starts: the clock ends it when a wake-up falls due."""
    global _waiting, _waits, _ring_redis
    with _alarms_lock:
        _waits += 1
        _waiting, _ring_redis = _waits, ring_redis
        _rearm.clear()
        _alarm_changed.notify()


def _disarm() -> None:
    global _waiting
    with _alarms_lock:
        _waiting = 0


def _clock() -> None:
    """The alarm clock thread: ends the scheduler's wait (once per wait) when its next wake-up falls due."""
    global _rung
    with _alarms_lock:
        while True:
            if not (_waiting and _alarms and _rung != _waiting):
                _alarm_changed.wait()
                continue
            left = _alarms[0] - time.time()
            if left > ALARM_SLACK_S:
                _alarm_changed.wait(left)
                continue
            _rung, via_redis = _waiting, _ring_redis
            _rearm.set()
            if via_redis:
                _alarm_changed.release()
                try:
                    _redis_client().lpush(WAKE_LIST, REARM)
                except Exception:
                    log.warning("the alarm clock could not wake the scheduler; it wakes at its timeout")
                finally:
                    _alarm_changed.acquire()


def serve_cluster_wakeups_here() -> None:
    """Called by the scheduler process before it starts anything on the cluster."""
    global _alarms
    with _alarms_lock:
        if _alarms is None:
            _alarms = []
        if not any(t.name == "alarm-clock" for t in threading.enumerate()):
            threading.Thread(target=_clock, name="alarm-clock", daemon=True).start()


def wake_cluster_at(due: float) -> bool:
    """Have this process's scheduler observe the cluster at `due` (epoch seconds); False when this process does
    not serve cluster wake-ups (the caller then queues a Celery task). Lost if the process dies: its successor
    re-reads everything, and every pass observes the cluster at least once a second anyway."""
    with _alarms_lock:
        if _alarms is None:
            return False
        heapq.heappush(_alarms, due)
        if _alarms[0] == due:
            _alarm_changed.notify()
        return True


def _next_alarm() -> float | None:
    with _alarms_lock:
        return _alarms[0] if _alarms else None


def wake_up_due() -> bool:
    """Whether a cluster wake-up this process serves is due (the next pass should come before other work)."""
    due = _next_alarm()
    return due is not None and due <= time.time() + ALARM_SLACK_S


def _take_due_alarms() -> bool:
    now = time.time() + ALARM_SLACK_S
    taken = False
    with _alarms_lock:
        while _alarms and _alarms[0] <= now:
            heapq.heappop(_alarms)
            taken = True
    return taken


def _enqueue(trigger: str, countdown: float | None = None) -> None:
    from scheduling.tasks import admission_tick

    if settings.CELERY_TASK_ALWAYS_EAGER:
        if countdown is None:  # eager mode runs the task inline; a busy run's retry is left to beat
            admission_tick.delay(trigger)
        return
    if not _claim_queue_slot(trigger):
        return
    try:
        admission_tick.apply_async(args=[trigger], countdown=countdown)
    except Exception:  # the broker is down: beat's periodic run picks the work up
        log.exception("could not enqueue an admission run (%s); beat will run it", trigger)
        _release_queue_slot()


_redis = None
QUEUED_FLAG = "portal:admission:queued"


def _redis_client():
    global _redis
    if _redis is None and settings.REDIS_URL:
        import redis

        _redis = redis.Redis.from_url(settings.REDIS_URL)
    return _redis


def _claim_queue_slot(trigger: str) -> bool:
    """True when no run is waiting in the queue yet (then the caller enqueues one)."""
    client = _redis_client()
    if client is None:
        return True
    try:
        return bool(client.set(QUEUED_FLAG, trigger, nx=True, ex=30))
    except Exception:
        return True


def _release_queue_slot() -> None:
    """Called by a run as it starts: requests from now on need a new run, which sees their commits."""
    client = _redis_client()
    if client is not None:
        try:
            client.delete(QUEUED_FLAG)
        except Exception:
            log.warning("could not clear the admission queue flag")


# --- one run ----------------------------------------------------------------------------------------------


def _lock(*, wait: bool = True) -> bool:
    """Take the loop's transaction-scoped lock (PostgreSQL); False when `wait` is off and another run has it."""
    if connection.vendor != "postgresql":
        return True  # SQLite: the IMMEDIATE transaction already holds the database's one write lock
    with connection.cursor() as cursor:
        if wait:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
            return True
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [LOCK_KEY])
        return bool(cursor.fetchone()[0])


class Busy(Exception):
    """Another admission run holds the lock."""


def admission_run(*, trigger: str = "beat", wait: bool = True) -> AdmissionRun | None:
    """Observe the cluster, decide and apply one round of admissions and preemptions, record the run; then
    start/stop jobs on the cluster.

    With wait=False (the Celery task) a run that finds another one in progress does not queue behind it,
    holding a worker: it asks for a fresh run right after and returns None.
    """
    _release_queue_slot()
    started = timezone.now()
    t0 = time.perf_counter()
    backend = get_backend()
    if getattr(backend, "mode", "portal") == "kueue":
        return _kueue_run(backend, trigger=trigger, started=started, t0=t0)
    try:
        with transaction.atomic():
            if not _lock(wait=wait):
                raise Busy
            now = timezone.now()
            _observe(now)
            with collector_paused():  # thousands of rows and workloads, all kept (the engine pauses its build too)
                rows = load_rows(ACTIVE_STATES + QUEUED_STATES)
                snapshot = snapshot_from_rows(rows, now=now)
            decisions = engine.decide(snapshot, estimate=published.asked())
            applied = apply_decisions(decisions, rows, now=now)
            published.after_run(decisions, now=now)  # the plan and team standing for the pages
            run = AdmissionRun.objects.create(
                started_at=started,
                duration_ms=(time.perf_counter() - t0) * 1000,
                trigger=trigger[:32],
                admitted=len(applied.admitted),
                preempted=len(applied.preempted),
                pending=applied.pending,
            )
    except Busy:
        _enqueue(trigger, countdown=0.05)
        return None
    except Exception as exc:
        log.exception("admission run failed (%s)", trigger)
        return AdmissionRun.objects.create(
            started_at=started,
            duration_ms=(time.perf_counter() - t0) * 1000,
            trigger=trigger[:32],
            error=f"{type(exc).__name__}: {exc}"[:2000],
        )
    if trigger == "beat":
        AdmissionRun.objects.filter(started_at__lt=started - RUN_HISTORY).delete()
    carry_out()
    return run


def _kueue_run(backend, *, trigger: str, started, t0) -> AdmissionRun:
    """Kueue admits: submit, observe and copy reasons instead of deciding (scheduling.kueue_mode)."""
    from scheduling.kueue_mode import kueue_pass

    try:
        counts = kueue_pass(backend=backend)
        error = ""
    except Exception as exc:
        log.exception("Kueue-mode pass failed (%s)", trigger)
        counts, error = {}, f"{type(exc).__name__}: {exc}"[:2000]
    return AdmissionRun.objects.create(
        started_at=started,
        duration_ms=(time.perf_counter() - t0) * 1000,
        trigger=trigger[:32],
        admitted=counts.get("admitted", 0),
        preempted=counts.get("preempted", 0),
        pending=Job.objects.filter(state__in=QUEUED_STATES).count(),
        error=error,
    )


@dataclass(slots=True)
class TeamOnCluster:
    name: str
    namespace: str


@dataclass(slots=True)
class JobOnCluster:
    """The columns of a job that backends' observe() reads (and the loop writes back), loaded as plain values:
    a seventh of the CPU of Job instances with their team and instance type (600 running jobs: 4 ms, not
    27 ms), which every pass that observes the cluster paid."""

    pk: int
    name: str
    state: str
    pods: int
    started_at: datetime | None
    expected_duration_s: int | None
    backend_ref: str
    preemption_count: int
    team: TeamOnCluster


def jobs_on_cluster() -> list[JobOnCluster]:
    """Admitted and running jobs the cluster has a name for (not those being started right now)."""
    jobs = Job.objects.filter(state__in=ACTIVE_STATES).exclude(backend_ref="").exclude(backend_ref__startswith=STARTING)
    rows = binary_values(  # every running job, once a second: timestamps read in binary (see binary_values)
        jobs,
        ("pk", "name", "state", "pods", "started_at", "expected_duration_s", "backend_ref", "preemption_count",
         "team__name", "team__namespace"),
    )  # fmt: skip
    teams: dict[tuple[str, str], TeamOnCluster] = {}
    out = []
    for *columns, team_name, namespace in rows:
        team = teams.get((team_name, namespace))
        if team is None:
            team = teams[team_name, namespace] = TeamOnCluster(team_name, namespace)
        out.append(JobOnCluster(*columns, team=team))
    return out


def _observe(now) -> None:
    """Apply what the cluster did since the last look (inside the run, so it decides on fresh usage)."""
    jobs = jobs_on_cluster()
    if jobs:
        try:
            observations = get_backend().observe(jobs, now=now)
        except ClusterUnreachable:
            return
        _apply_observations(jobs, observations)


class Applied:
    def __init__(self):
        self.admitted: list[int] = []
        self.preempted: list[int] = []
        self.pending = 0
        self.events: list[JobEvent] = []


def apply_decisions(decisions: engine.Decisions, jobs: list[JobRow] | dict[str, JobRow], *, now) -> Applied:
    """Write the engine's decisions: preemptions first (they make the room), then admissions, then reasons.

    Must run inside the run's transaction. Each state change is conditional on the state read: the rows are
    locked (SELECT ... FOR UPDATE) in the state the run expects, and only those are written, in one batched
    UPDATE per kind of change; each change comes with its event, all events in one INSERT.
    """
    by_name = jobs if isinstance(jobs, dict) else {str(job.pk): job for job in jobs}
    applied = Applied()
    events: list[JobEvent] = []
    if decisions.preemptions:
        applied.preempted = _preempt_all(decisions.preemptions, by_name, now, events)
    if decisions.admissions:
        type_ids = dict(InstanceType.objects.values_list("name", "pk"))
        applied.admitted = _admit_all(decisions.admissions, by_name, type_ids, now, events)
    applied.events = insert_events(events)
    _update_reasons(decisions.reasons, by_name, skip=set(applied.preempted))
    applied.pending = len(decisions.reasons)
    return applied


def _locked(ids, states) -> dict[int, str]:
    """Of `ids`, those still in one of `states` (id -> the state the database holds), locked for this
    transaction so they stay there."""
    if not ids:
        return {}
    rows = Job.objects.select_for_update().filter(pk__in=ids, state__in=states).order_by("pk")
    return dict(rows.values_list("pk", "state"))


def preemption_reason(victim, preemptor, why: str) -> str:
    if preemptor is None:
        return f"preempted {PREEMPTION_WHY.get(why, why)}"
    return f"preempted by job #{preemptor.pk} {preemptor.name} of {preemptor.team_name} {PREEMPTION_WHY.get(why, why)}"


def _preempt_all(preemptions, by_name, now, events: list[JobEvent]) -> list[int]:
    still_active = _locked([int(p.workload) for p in preemptions], ACTIVE_STATES)
    requeued_ids: dict[str, list[int]] = defaultdict(list)
    done = []
    for preemption in preemptions:
        victim, preemptor = by_name[preemption.workload], by_name.get(preemption.by)
        if victim.pk not in still_active:
            continue
        reason = preemption_reason(victim, preemptor, preemption.reason)
        requeued = (
            f"back in the queue after being preempted by job #{preemptor.pk}" if preemptor else "back in the queue"
        )
        requeued_ids[requeued].append(victim.pk)
        events.append(
            # the state the database holds: the scheduler's copy may still say admitted where the cluster has
            # started the job since it was read
            JobEvent(
                job_id=victim.pk,
                at=now,
                from_state=still_active[victim.pk],
                to_state=JobState.PREEMPTED,
                reason=reason,
            )
        )
        events.append(
            JobEvent(
                job_id=victim.pk, at=now, from_state=JobState.PREEMPTED, to_state=JobState.PENDING, reason=requeued
            )
        )
        victim.state = JobState.PENDING  # the engine may admit it again in the same round (moved elsewhere)
        victim.reason = requeued
        done.append(victim.pk)
    for requeued, ids in requeued_ids.items():
        Job.objects.filter(pk__in=ids).update(
            state=JobState.PENDING,
            reason=requeued,
            preemption_count=F("preemption_count") + 1,
            admitted_at=None,
            started_at=None,
            assigned_instance_type=None,
            placement=None,
            borrowed=False,
            backend_stop_pending=True,
        )
    return done


def admission_reason(admission: engine.Admission) -> str:
    where = f"admitted on {admission.instance_type}"
    if admission.nodes:
        nodes = sorted(set(admission.nodes))
        where += f" (node{'s' if len(nodes) > 1 else ''} {', '.join(str(n) for n in nodes)})"
    return where + (" on quota borrowed from its cohort" if admission.borrowed else " within its team's quota")


ADMIT_FIELDS = ["state", "reason", "admitted_at", "assigned_instance_type", "placement", "borrowed"]


def _admit_all(admissions, by_name, type_ids: dict, now, events: list[JobEvent]) -> list[int]:
    still_queued = _locked([int(a.workload) for a in admissions], QUEUED_STATES)
    updates, done = [], []
    for admission in admissions:
        job = by_name[admission.workload]
        if job.pk not in still_queued:
            continue
        reason = admission_reason(admission)
        updates.append(
            JobChange(
                pk=job.pk,
                state=JobState.ADMITTED,
                reason=reason,
                admitted_at=now,
                assigned_instance_type_id=type_ids.get(admission.instance_type),
                placement=admission.nodes,
                borrowed=admission.borrowed,
            )
        )
        events.append(JobEvent(job_id=job.pk, at=now, from_state=job.state, to_state=JobState.ADMITTED, reason=reason))
        job.state, job.reason = JobState.ADMITTED, reason
        done.append(job.pk)
    update_jobs(updates, ADMIT_FIELDS)
    return done


EVENT_COLUMNS = ("job_id", "at", "from_state", "to_state", "reason")


def insert_events(events: list[JobEvent], *, batch: int = 5000) -> list[JobEvent]:
    """INSERT `events` in one statement per `batch`, their ids set from RETURNING (on PostgreSQL, without
    bulk_create's per-object preparation); elsewhere bulk_create. The rows go as one array per column
    (unnest), not one placeholder per value: see update_jobs."""
    if connection.vendor != "postgresql" or not events:
        return JobEvent.objects.bulk_create(events)
    at = JobEvent._meta.get_field("at")
    columns = ", ".join(f'"{c}"' for c in EVENT_COLUMNS)
    casts = ["bigint", *(JobEvent._meta.get_field(c).db_type(connection) for c in EVENT_COLUMNS[1:])]  # job_id
    arrays = ", ".join(f"%s::{cast}[]" for cast in casts)
    sql = f'INSERT INTO "{JobEvent._meta.db_table}" ({columns}) SELECT * FROM unnest({arrays}) RETURNING "id"'
    for start in range(0, len(events), batch):
        chunk = events[start : start + batch]
        params = [
            [e.job_id for e in chunk],
            [at.get_db_prep_save(e.at, connection) for e in chunk],
            [e.from_state for e in chunk],
            [e.to_state for e in chunk],
            [e.reason for e in chunk],
        ]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            for event, (pk,) in zip(chunk, cursor.fetchall(), strict=True):
                event.pk = pk
                event._state.adding, event._state.db = False, connection.alias
    return events


class JobChange:
    """New values of some fields of one job, by attribute name, for update_jobs: a Job instance cost 27 us to
    build (every field's default is computed), more than writing its row."""

    def __init__(self, pk: int, **values):
        self.pk = pk
        self.__dict__.update(values)


def update_jobs(
    jobs: list[Job | JobChange], fields: list[str], *, batch: int = 5000, states: tuple[str, ...] | None = None
) -> None:
    """Write `fields` of each of `jobs` (different values per job) in one statement per `batch` jobs; with
    `states`, only to the rows still in one of them.

    On PostgreSQL an UPDATE ... FROM unnest(one array per column): Django's bulk_update builds a CASE WHEN
    expression per field and row, which costs more CPU to compile than the rows cost to write, and a VALUES
    list with a placeholder per value cost the scheduler more to render client-side (psycopg parses every
    query that long afresh) than the database took to run it. Callers hold the rows' locks.
    """
    if not jobs:
        return
    model_fields = [Job._meta.get_field(name) for name in fields]
    if connection.vendor != "postgresql":
        rows = [Job(pk=job.pk, **{f.attname: getattr(job, f.attname) for f in model_fields}) for job in jobs]
        target = Job.objects.filter(state__in=states) if states is not None else Job.objects
        target.bulk_update(rows, fields, batch_size=batch)
        return
    columns = [f.column for f in model_fields]
    casts = [f.db_type(connection) for f in model_fields]
    table = Job._meta.db_table
    assignments = ", ".join(f'"{c}" = v."{c}"' for c in columns)
    names = ", ".join(['"id"', *(f'"{c}"' for c in columns)])
    arrays = ", ".join(f"%s::{cast}[]" for cast in ["bigint", *casts])
    sql = f'UPDATE "{table}" AS j SET {assignments} FROM unnest({arrays}) AS v({names}) WHERE j."id" = v."id"'
    if states is not None:
        sql += ' AND j."state" = ANY(%s)'
    for start in range(0, len(jobs), batch):
        chunk = jobs[start : start + batch]
        params = [[job.pk for job in chunk]]
        for field in model_fields:
            params.append([field.get_db_prep_save(getattr(job, field.attname), connection) for job in chunk])
        if states is not None:
            params.append(list(states))
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


def _update_reasons(reasons: dict[str, str], by_name: dict[str, JobRow], *, skip: set[int]) -> None:
    """Store each pending job's reason where it changed (and the job is still queued), in one UPDATE."""
    changed = []
    for name, reason in reasons.items():
        job = by_name.get(name)
        if job is not None and job.pk not in skip and job.state in QUEUED_STATES and job.reason != reason:
            changed.append(JobChange(pk=job.pk, reason=reason))
            job.reason = reason
    update_jobs(changed, ["reason"], states=QUEUED_STATES)


# --- telling the cluster ----------------------------------------------------------------------------------


STARTING = "starting@"  # backend_ref while one process starts the job: others keep off
CLAIM_EXPIRES_S = 120


def carry_out() -> None:
    """Bring the cluster in line with the database: stop what was stopped here, start what was admitted.

    Looks at the database rather than at one run's decisions, so anything a failed call left undone
    (ClusterUnreachable) is simply done on the next pass. Each start and stop is claimed with a conditional
    update first, so two processes never start or stop the same job twice.
    """
    backend = get_backend()
    stop_all(backend=backend)
    stale = f"{STARTING}{time.time() - CLAIM_EXPIRES_S:.0f}"
    starts = list(
        Job.objects.filter(state=JobState.ADMITTED, backend_stop_pending=False)
        .filter(models.Q(backend_ref="") | models.Q(backend_ref__startswith=STARTING, backend_ref__lt=stale))
        .select_related("team", "assigned_instance_type")
        .order_by("admitted_at", "pk")
    )
    start_on_cluster(starts, backend=backend)


CARRY_OUT_FLAG = "portal:carry_out:queued"


def request_carry_out() -> None:
    """Have a Celery worker carry out the latest decisions (one queued task at a time); inline without a
    broker to hand it to (eager mode) or when the broker is down."""
    from scheduling.tasks import carry_out_tick

    if settings.CELERY_TASK_ALWAYS_EAGER:
        carry_out()
        return
    client = _redis_client()
    try:
        if client is None or client.set(CARRY_OUT_FLAG, 1, nx=True, ex=30):
            carry_out_tick.delay()
    except Exception:
        log.warning("could not queue carry_out; doing it here")
        carry_out()


def carry_out_started() -> None:
    client = _redis_client()
    if client is not None:
        try:
            client.delete(CARRY_OUT_FLAG)
        except Exception:
            log.warning("could not clear the carry-out flag")


def stop_all(*, backend) -> None:
    """Stop every job marked for stopping: claimed all at once (rows another process holds are skipped),
    stopped one by one, bookkept in two statements; a refused stop stays marked for the next pass."""
    with transaction.atomic():
        jobs = list(
            Job.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(backend_stop_pending=True)
            .select_related("team")
        )
        Job.objects.filter(pk__in=[job.pk for job in jobs]).update(backend_stop_pending=False)
    if not jobs:
        return
    refused, stopped = [], []
    for job in jobs:
        try:
            backend.stop(job, reason=job.reason, preempted=job.state in QUEUED_STATES)
        except ClusterUnreachable:
            log.warning("cluster unreachable: job #%s stays marked for stopping", job.pk)
            refused.append(job.pk)
            continue
        if job.backend_ref and not job.backend_ref.startswith(STARTING):
            stopped.append(job)
    if refused:
        Job.objects.filter(pk__in=refused).update(backend_stop_pending=True)
    if stopped:  # forget the cluster's name, unless it was started again meanwhile under another one
        with transaction.atomic():
            current = dict(
                Job.objects.select_for_update().filter(pk__in=[j.pk for j in stopped]).values_list("pk", "backend_ref")
            )
            Job.objects.filter(pk__in=[j.pk for j in stopped if current.get(j.pk) == j.backend_ref]).update(
                backend_ref=""
            )


def stop_claimed(job: Job, *, backend, reason: str, preempted: bool) -> None:
    if not Job.objects.filter(pk=job.pk, backend_stop_pending=True).update(backend_stop_pending=False):
        return  # another process is stopping it
    try:
        backend.stop(job, reason=reason, preempted=preempted)
    except ClusterUnreachable:
        log.warning("cluster unreachable: job #%s stays marked for stopping", job.pk)
        Job.objects.filter(pk=job.pk).update(backend_stop_pending=True)
        return
    if job.backend_ref and not job.backend_ref.startswith(STARTING):
        Job.objects.filter(pk=job.pk, backend_ref=job.backend_ref).update(backend_ref="")


def start_on_cluster(jobs: list[Job], *, backend) -> None:
    """Start admitted jobs: claim them all in one UPDATE, start each, record their names in one more."""
    claim = f"{STARTING}{time.time():.0f}"
    with transaction.atomic():
        claimable = Job.objects.select_for_update(skip_locked=True).filter(
            pk__in=[job.pk for job in jobs], state=JobState.ADMITTED, backend_stop_pending=False
        )
        # each job is claimable only in the backend_ref it was read with (another process may have claimed it)
        expected = {job.pk: job.backend_ref for job in jobs}
        ids = [pk for pk, ref in claimable.values_list("pk", "backend_ref") if ref == expected[pk]]
        Job.objects.filter(pk__in=ids).update(backend_ref=claim)
    claimed = set(ids)
    started, unreachable = [], []
    for job in jobs:
        if job.pk not in claimed:
            continue  # another process claimed it, or it is no longer admitted
        try:
            job.backend_ref = backend.start(job, instance_type=job.assigned_instance_type.name, nodes=job.placement)
        except ClusterUnreachable:
            unreachable.append(job.pk)
            continue
        started.append(job)
    if unreachable:
        Job.objects.filter(pk__in=unreachable, backend_ref=claim).update(backend_ref="")
        Job.objects.filter(pk__in=unreachable, state=JobState.ADMITTED).update(reason=UNREACHABLE)
    if not started:
        return
    with transaction.atomic():
        still = set(
            Job.objects.select_for_update()
            .filter(pk__in=[job.pk for job in started], state=JobState.ADMITTED, backend_ref=claim)
            .values_list("pk", flat=True)
        )
        update_jobs([job for job in started if job.pk in still], ["backend_ref"])
    gone = [job for job in started if job.pk not in still]
    for job in gone:  # preempted or cancelled while it was being started: take it off again
        try:
            backend.stop(job, reason="no longer admitted", preempted=False)
        except ClusterUnreachable:
            log.warning("cluster unreachable: job #%s may run without admission until the next pass", job.pk)
    if gone:  # drop the claim, or a later admission would wait for it to expire before starting
        Job.objects.filter(pk__in=[job.pk for job in gone], backend_ref=claim).update(backend_ref="")
    started = [job for job in started if job.pk in still]
    if started:  # record them running now, without the loop's lock: a pass never waits for the carrier
        cluster_sync(jobs=started, backend=backend, lock=False)


def stop_on_cluster(job_ids: list[int], *, reason: str, preempted: bool) -> None:
    """Stop jobs right away (after a cancel); on failure they stay marked and the loop retries."""
    backend = get_backend()
    for job in Job.objects.filter(pk__in=job_ids, backend_stop_pending=True).select_related("team"):
        stop_claimed(job, backend=backend, reason=reason, preempted=preempted)


def cluster_sync(*, jobs=None, backend=None, wait: bool | None = None, lock: bool = True) -> int:
    """Apply what the cluster reports about admitted/running jobs; ask for a run when any finished.

    Returns the number of jobs that finished. When an admission run holds the lock, that run (or the one
    asked for here) observes the cluster itself, so nothing waits. `wait` (default: with the scheduler
    process) waits for the lock instead; the carrier, which starts jobs, never does: it would hold back the
    next starts for a whole pass. Without `lock` (the carrier, marking what it just started running) the rows'
    own locks are enough: every change is conditional on the state it leaves, and a run's conditional writes
    treat admitted and running alike, so nobody waits for the other's transaction.
    """
    backend = backend or get_backend()
    if jobs is None:
        jobs = jobs_on_cluster()
    if not jobs:
        return 0
    try:
        observations = backend.observe(jobs, now=timezone.now())
    except ClusterUnreachable:
        log.warning("cluster unreachable: nothing observed this time")
        return 0
    if not observations:
        return 0
    # The admission run writes the same rows: one writer at a time. A warm scheduler's passes are short, so
    # the finish waits for one to end; with cold runs (long, and each observes the cluster itself) it skips.
    wait = settings.ADMISSION_SCHEDULER == "process" if wait is None else wait
    with transaction.atomic():
        if lock and not _lock(wait=wait):
            admission_request("finish")
            return 0
        finished = _apply_observations(jobs, observations)
        if finished:
            admission_request("finish")
    return finished


def _apply_observations(jobs, observations) -> int:
    """Write what the cluster reported: each change conditional on the state it leaves (rows locked first),
    batched into one UPDATE per kind (started, ended) and one INSERT of events."""
    by_id = {job.pk: job for job in jobs}
    relevant = [o for o in sorted(observations, key=lambda o: o.job_id) if o.job_id in by_id]
    relevant = [o for o in relevant if o.state != by_id[o.job_id].state]  # sorted() keeps each job's order
    if not relevant:
        return 0
    current = dict(
        Job.objects.select_for_update()
        .filter(pk__in=[o.job_id for o in relevant], state__in=ACTIVE_STATES)
        .order_by("pk")
        .values_list("pk", "state")
    )
    started, ended, events = [], [], []
    for obs in relevant:
        job = by_id[obs.job_id]
        state_now = current.get(obs.job_id)
        allowed = (JobState.ADMITTED,) if obs.state == JobState.RUNNING else ACTIVE_STATES
        if state_now not in allowed:
            continue
        reason = obs.reason or _observed_reason(obs.state)
        row = JobChange(pk=job.pk, state=obs.state, reason=reason)
        if obs.state == JobState.RUNNING:
            row.started_at = obs.at
            started.append(row)
        else:
            row.finished_at, row.backend_ref = obs.at, ""
            ended.append(row)
        events.append(JobEvent(job_id=job.pk, at=obs.at, from_state=state_now, to_state=obs.state, reason=reason))
        job.state = current[obs.job_id] = obs.state  # a job may start and end in one look
    update_jobs(started, ["state", "reason", "started_at"])
    update_jobs(ended, ["state", "reason", "finished_at", "backend_ref"])
    insert_events(events)
    return len(ended)


def _observed_reason(state: str) -> str:
    return {
        JobState.RUNNING: "running on the cluster",
        JobState.SUCCEEDED: "finished successfully",
        JobState.FAILED: "failed on the cluster",
    }.get(state, state)
