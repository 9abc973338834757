"""The warm scheduler: the admission loop holding the engine's state between passes, fed by events.

A cold run (loop.admission_run) reads every pending and running job, builds the engine from scratch and
throws it away. The scheduler process (`manage.py scheduler`, scheduling/leader.py) keeps one `WarmState`
instead. Each pass, inside one transaction under the loop's advisory lock, as a cold run:

1. applies what the cluster reported (loop._observe), as today;
2. reads the job events committed since the last pass (JobEvent rows: submitted, admitted, preempted,
   finished, failed, cancelled; by anyone: services, the cluster observer, a cold run) and re-reads just
   those jobs' rows, then brings the engine in line with each row (engine.warm: submit, withdraw, place,
   requeue, forget);
3. settles the engine and writes its decisions with loop.apply_decisions (one transaction, conditional
   writes, as a cold run).

The database stays the source of truth. Events are only hints of which rows to re-read: a row is re-read
whole, so a duplicate or late event is harmless, and events are re-scanned for a window of seconds because
ids are handed out before their transactions commit. The state is re-read whole on start, on takeover,
when the configuration changes (quota, policy, inventory, priority classes: a fingerprint query per pass),
after any failed pass, and every CHECK_SECONDS as a consistency check that compares the warm state with a
fresh one, logs any drift and carries on with the fresh one.
"""

from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from quotas.models import ClusterPolicy, ComputeAllocation, ConfigVersion, InstanceType, NodeGroup, PriorityClass, Team
from scheduling import engine, published
from scheduling.engine import warm as engine_warm
from scheduling.engine.collector import collector_paused
from scheduling.engine.queues import PENDING, RUNNING
from scheduling.loop import LOCK_KEY, RUN_HISTORY, STARTING, _observe, apply_decisions, request_carry_out
from scheduling.models import ACTIVE_STATES, FINAL_STATES, QUEUED_STATES, AdmissionRun, JobEvent, JobState
from scheduling.snapshot import JobRow, RowLookups, load_rows, snapshot_from_rows

log = logging.getLogger(__name__)

EVENT_WINDOW_S = 10.0  # events are re-scanned this long: an id is taken before its transaction commits
CHECK_SECONDS = 60.0  # full re-read and comparison (drift repair)
HEARTBEAT_SECONDS = 15.0  # an idle scheduler still records a run this often (readiness looks at it)
OBSERVE_SECONDS = 1.0  # how often a pass also asks the cluster itself
FINGERPRINT_SECONDS = 1.0  # how often a pass checks the configuration fingerprint (a change also wakes it)
# A pass's settle stops offering this long after the pass began: what it decided is written, the cluster is
# observed (work that ended meanwhile is released) and the next pass goes on at once. Without a bound, a settle
# over a huge backlog observes nothing while it runs, so ever more running work is past its expected end and every
# plan gets dearer (seen with Kueue's large-scale scenario: a first pass that did not end in 4 minutes). 0.6 s
# keeps a pass, with its writes, under a second at the largest cluster the bounds allow (bench/bounds.py; 2 s
# before: about the same CPU to settle a backlog, in more and shorter passes).
SETTLE_BUDGET_S = 0.6
GARBAGE_WAIT_S = 30.0  # a replaced state is collected when the scheduler is idle, or at the latest this late
EXPLAIN_ALL_SECONDS = 5.0  # every pending job's reason refreshed this often (or 10x its cost); new ones at once
IGNORED_EVENTS = (JobState.RUNNING,)  # admitted -> running changes nothing the engine holds


class Drift(Exception):
    """A row the engine cannot follow incrementally: re-read everything."""


def config_fingerprint() -> tuple:
    """One query that changes whenever quota, teams, policy, inventory or priority classes change."""
    tables = {
        "v": ConfigVersion._meta.db_table,
        "t": Team._meta.db_table,
        "a": ComputeAllocation._meta.db_table,
        "n": NodeGroup._meta.db_table,
        "i": InstanceType._meta.db_table,
        "p": PriorityClass._meta.db_table,
        "c": ClusterPolicy._meta.db_table,
    }
    sql = (
        "SELECT (SELECT max(id) FROM {v}), (SELECT count(*) FROM {t}), (SELECT max(id) FROM {t}),"
        " (SELECT count(*) FROM {a}), (SELECT max(id) FROM {a}),"
        " (SELECT count(*) FROM {n}), (SELECT sum(node_count) FROM {n}), (SELECT max(instance_type_id) FROM {n}),"
        " (SELECT count(*) FROM {i}), (SELECT sum(vcpus + memory_gib + accelerators) FROM {i}),"
        " (SELECT count(*) FROM {p}), (SELECT sum(weight) FROM {p}),"
        " (SELECT max(task_prioritization || idle_compute) FROM {c})"
    ).format(**tables)
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return tuple(cursor.fetchone())


@dataclass
class PassResult:
    admitted: int = 0
    preempted: int = 0
    pending: int = 0
    changed_jobs: int = 0
    rebuilt: str = ""  # why the state was re-read whole this pass ("" = it was not)
    cut: bool = False  # the settle reached SETTLE_BUDGET_S: the next pass observes the cluster and goes on at once
    drift: int = 0  # jobs the warm state had wrong (consistency check)


@dataclass
class WarmState:
    """The engine's Scheduler plus what the database side needs to follow it."""

    scheduler: object
    rows: dict[str, JobRow]  # every pending and running job the engine holds, by engine name
    lookups: RowLookups
    teams: dict[int, str]
    fingerprint: tuple
    top: int  # the newest event id applied
    gaps: dict[int, float] = field(default_factory=dict)  # ids below `top` not seen yet -> since when
    own: set[int] = field(default_factory=set)  # ids of events this process wrote (nothing to apply)
    suspects: set[int] = field(default_factory=set)  # jobs to re-read next pass (a conditional write missed)
    seq: int = 0
    loaded_at: float = field(default_factory=time.monotonic)
    followed: set[str] = field(default_factory=set)  # jobs re-read this pass (explained at once)

    # --- loading -------------------------------------------------------------------------------------------

    @classmethod
    def load(cls, now, *, freeze: bool = False) -> WarmState:
        """The whole state from the database (inside the pass's transaction), built with the cyclic collector
        paused; with `freeze`, moved out of its sight as soon as it is built (gc.freeze: see WarmScheduler)."""
        floor = _event_floor(now)
        recent = sorted(JobEvent.objects.filter(pk__gt=floor).values_list("pk", flat=True))
        top = recent[-1] if recent else floor
        seen_at = time.monotonic()
        gaps = {pk: seen_at for pk in set(range(floor + 1, top)) - set(recent)}
        teams = dict(Team.objects.values_list("pk", "name"))
        with collector_paused():
            rows = load_rows(ACTIVE_STATES + QUEUED_STATES, teams=teams)
            lookups = RowLookups()
            scheduler = engine.build_scheduler(snapshot_from_rows(rows, now=now, lookups=lookups))
            scheduler.wake_all()
            fingerprint = config_fingerprint()  # last: reading the policy may have created its row
            state = cls(
                scheduler=scheduler,
                rows={str(row.pk): row for row in rows},
                lookups=lookups,
                teams=teams,
                fingerprint=fingerprint,
                top=top,
                gaps=gaps,
                seq=len(rows),
            )
            if freeze:
                gc.freeze()
        return state

    # --- following the database ----------------------------------------------------------------------------

    def new_events(self) -> set[int]:
        """Ids of the jobs with events not applied yet.

        Reads the events above the newest one seen, plus the gaps below it: ids handed out to transactions
        that had not committed when their successors were read. A gap is looked for EVENT_WINDOW_S, then
        given up (its transaction rolled back); the consistency check covers anything later still.
        """
        now = time.monotonic()
        gaps = [pk for pk, at in self.gaps.items() if now - at <= EVENT_WINDOW_S]
        self.gaps = {pk: self.gaps[pk] for pk in gaps}
        query = Q(pk__gt=self.top) | Q(pk__in=gaps) if gaps else Q(pk__gt=self.top)
        changed, above = set(), []
        for pk, job_id, to_state in JobEvent.objects.filter(query).values_list("pk", "job_id", "to_state"):
            self.gaps.pop(pk, None)
            if pk > self.top:
                above.append(pk)
            if pk in self.own:
                self.own.discard(pk)
            elif to_state not in IGNORED_EVENTS:
                changed.add(job_id)
        if above:
            present = set(above)
            for pk in range(self.top + 1, max(above)):
                if pk not in present:
                    self.gaps[pk] = now
            self.top = max(above)
        return changed

    def mark_seen(self, events: list[JobEvent]) -> None:
        """Events this process wrote itself: the engine already knows."""
        self.own.update(event.pk for event in events if event.pk is not None and event.pk > self.top)

    def follow(self, job_ids: set[int], now_ts: float) -> int:
        """Bring the engine in line with the rows of `job_ids`, as they are in the database now."""
        ids = job_ids | self.suspects
        self.suspects = set()
        self.followed = {str(pk) for pk in ids}
        if not ids:
            return 0
        s = self.scheduler
        for row in load_rows(ids=ids, teams=self.teams):
            if not row.team_name:
                raise Drift(f"job #{row.pk} belongs to a team the scheduler has not loaded")
            name = str(row.pk)
            job = s.jobs.get(name)
            if row.state in FINAL_STATES:
                if job is not None:
                    engine_warm.forget(s, job, now_ts)
                self.rows.pop(name, None)
                continue
            if job is None:
                workload = self.lookups.workload(row)
                self.seq += 1
                job = s.make_job(
                    workload.name, self.seq, workload.team, workload.requests, workload.pods, workload.priority,
                    workload.submit, workload.instance_type, workload.duration,
                )  # fmt: skip
                if row.state in QUEUED_STATES:
                    s.submit(job)
            self.rows[name] = row
            if row.state in QUEUED_STATES:
                if job.state == RUNNING:
                    engine_warm.requeue(s, job)  # preempted by someone else (a cold run)
            elif row.state in ACTIVE_STATES:
                flavor = self.lookups.types.get(row.assigned_instance_type_id)
                if flavor is None:
                    raise Drift(f"job #{row.pk} is {row.state} without an instance type")
                placed_elsewhere = job.state == RUNNING and (
                    s.flavor_names[job.flavor] != flavor.name or (job.nodes or None) != (row.placement or None)
                )
                if placed_elsewhere:
                    engine_warm.requeue(s, job)
                if job.state != RUNNING:
                    since = row.admitted_at.timestamp() if row.admitted_at else now_ts
                    engine_warm.place(s, job, flavor.name, row.placement, since)
        return len(ids)

    def compare(self, fresh: WarmState) -> int:
        """Jobs whose engine state differs between this state and a fresh one (pending / running where)."""

        def shape(state):
            out = {}
            for name, job in state.scheduler.jobs.items():
                if job.state in (PENDING, RUNNING):
                    where = state.scheduler.flavor_names[job.flavor] if job.state == RUNNING else None
                    out[name] = (job.state, where, tuple(job.nodes or ()))
            return out

        mine, theirs = shape(self), shape(fresh)
        return sum(1 for name in mine.keys() | theirs.keys() if mine.get(name) != theirs.get(name))


def _event_floor(now) -> int:
    """The newest event id old enough that no transaction still holding a lower id can be open."""
    from datetime import timedelta

    old = JobEvent.objects.filter(at__lt=now - timedelta(seconds=EVENT_WINDOW_S)).order_by("-pk").first()
    return old.pk if old else 0


def _lock() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])


class WarmScheduler:
    """Runs passes; holds the WarmState between them. One per scheduler process (the leader)."""

    def __init__(
        self,
        *,
        check_seconds: float = CHECK_SECONDS,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
        carry_out=request_carry_out,
        freeze_state: bool = False,
    ):
        self.state: WarmState | None = None
        # The scheduler process freezes the state it reads whole (gc.freeze), so that no collection walks it
        # again; the state it replaces, frozen too, is garbage from then on, collected between passes
        # (collect_garbage). None: nothing waits to be collected; else since when.
        self.freeze_state = freeze_state
        self.garbage_since: float | None = None
        self.carry_out = carry_out  # called after a pass that changed something: start and stop on the cluster
        self.check_seconds = check_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.last_recorded = 0.0
        self.last_observed = self.last_fingerprint = self.explained_at = 0.0
        # seconds the last refresh of every pending job's reason took: it comes at most once per ten times that
        self.explain_cost = 0.0
        self.explain_due_since: float | None = None  # that refresh is due (since when), None: it is not
        # when this process last published the plan for the pages (published.Pace): kept across states read
        # whole, so that the consistency check once a minute publishes only as often as any pass would
        self.pace = published.Pace()
        self.reload_reason = "start"

    def drop(self, reason: str) -> None:
        """Forget the warm state; the next pass re-reads everything (after a failure, on takeover)."""
        self.state = None
        self.reload_reason = reason

    def run_pass(self, *, trigger: str = "event", observe: bool = False) -> PassResult:
        """One pass; raises after rolling back (the state is dropped, the next pass re-reads it)."""
        started = timezone.now()
        t0 = time.perf_counter()
        deadline = time.monotonic() + SETTLE_BUDGET_S  # from the pass's start: reading the state whole counts too
        result = PassResult()
        try:
            with transaction.atomic():
                _lock()
                now = timezone.now()
                if observe or time.monotonic() - self.last_observed >= OBSERVE_SECONDS:
                    _observe(now)  # asked by a cluster wake-up, else once a second as a safety net
                    self.last_observed = time.monotonic()
                self._bring_up_to_date(now, result)
                if self.explain_due_since is None and (
                    result.rebuilt
                    or time.monotonic() - self.explained_at >= max(EXPLAIN_ALL_SECONDS, 10 * self.explain_cost)
                ):
                    self.explain_due_since = time.monotonic()
                # a pass that refreshes every reason leaves the time that takes out of its settle's budget
                explaining = self.explain_due_since is not None
                self.state.scheduler.deadline = deadline - (self.explain_cost if explaining else 0.0)
                try:
                    decisions = engine_warm.settle(
                        self.state.scheduler, now.timestamp(), teams=False, explain_only=self.state.followed
                    )
                finally:
                    self.state.scheduler.deadline = None
                result.cut = self.state.scheduler.cut
                if explaining and (
                    time.monotonic() < deadline or time.monotonic() - self.explain_due_since >= EXPLAIN_ALL_SECONDS
                ):
                    # every pending job's reason; on a huge backlog this costs seconds, so it is refreshed at
                    # most once per ten times its own cost (the scheduler spends at most a tenth of its time on
                    # it; new and changed jobs are still explained at once, above). A pass already past its
                    # budget (one that read the state whole, say) leaves it to the next pass, within
                    # EXPLAIN_ALL_SECONDS.
                    t1 = time.monotonic()
                    engine_state = self.state.scheduler
                    decisions.reasons.update(engine_warm.reasons_for(engine_state, list(engine_state.jobs)))
                    self.explained_at = time.monotonic()
                    self.explain_due_since = None
                    self.explain_cost = self.explained_at - t1
                applied = apply_decisions(decisions, self.state.rows, now=now)
                self._after_apply(decisions, applied, now.timestamp())
                result.admitted, result.preempted = len(applied.admitted), len(applied.preempted)
                result.pending = engine_warm.pending_count(self.state.scheduler)
                if self._should_record(result):
                    self._record(started, t0, trigger, result)
        except Exception as exc:
            self.drop(f"after a failed pass ({type(exc).__name__})")
            AdmissionRun.objects.create(
                started_at=started,
                duration_ms=(time.perf_counter() - t0) * 1000,
                trigger=f"warm:{trigger}"[:32],
                error=f"{type(exc).__name__}: {exc}"[:2000],
            )
            raise
        if result.admitted or result.preempted or result.rebuilt:
            self.carry_out()  # first: a job's quota is held from its admission, its run counts from its start
        if result.rebuilt in ("start", "takeover", "configuration changed"):
            self.pace = published.Pace()  # what is published is another process's, or no longer holds: at once
        published.after_pass(self.state, result, applied, now, self.pace)  # the plan for the pages (never raises)
        return result

    def _bring_up_to_date(self, now, result: PassResult) -> None:
        state = self.state
        checking = state is not None and time.monotonic() - state.loaded_at > self.check_seconds
        if state is not None and not checking and time.monotonic() - self.last_fingerprint >= FINGERPRINT_SECONDS:
            self.last_fingerprint = time.monotonic()
            if config_fingerprint() != state.fingerprint:
                self.drop("configuration changed")
                state = None
        if state is not None:
            try:
                result.changed_jobs = state.follow(state.new_events(), now.timestamp())
            except Drift as exc:
                log.warning("warm scheduler: %s; re-reading the whole state", exc)
                self.drop(str(exc)[:60])
                state = None
        if state is None:
            self.state = self._load(now)
            result.rebuilt = self.reload_reason
            log.info("warm scheduler: state read whole (%s): %d jobs", self.reload_reason, len(self.state.rows))
        elif checking:
            AdmissionRun.objects.filter(started_at__lt=now - RUN_HISTORY).delete()
            fresh = self._load(now)
            result.drift = state.compare(fresh)
            result.rebuilt = "consistency check"
            if result.drift:
                log.warning("warm scheduler: consistency check found %d jobs out of step; repaired", result.drift)
            self.state = fresh
        self.reload_reason = "start"

    def _load(self, now) -> WarmState:
        if self.freeze_state and self.garbage_since is None:
            self.garbage_since = time.monotonic()  # the state this one replaces (if any) is garbage now
        return WarmState.load(now, freeze=self.freeze_state)

    def collect_garbage(self, *, idle: bool = True) -> float | None:
        """Collect the states replaced since the last collection (a full collection's walk of everything the
        process holds: 0.25-0.33 s at the bounds' largest cluster), then freeze what is left again, the state in
        use with it: unfrozen, every full collection would scan each object of the engine's state (in the live
        bench, 150 ms at a time in the middle of a pass, while ends waited). The scheduler process calls it after
        each pass: `idle` when no pass is due (nothing waits for the scheduler), else it waits up to
        GARBAGE_WAIT_S. Returns the CPU seconds it took, None when it did nothing."""
        if self.garbage_since is None or (not idle and time.monotonic() - self.garbage_since < GARBAGE_WAIT_S):
            return None
        c0 = time.process_time()
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.garbage_since = None
        return time.process_time() - c0

    def _after_apply(self, decisions, applied, now_ts: float) -> None:
        state = self.state
        state.mark_seen(applied.events)
        wanted = {int(a.workload) for a in decisions.admissions} | {int(p.workload) for p in decisions.preemptions}
        missed = wanted - set(applied.admitted) - set(applied.preempted)
        state.suspects |= missed  # cancelled or changed meanwhile: re-read next pass

    def _should_record(self, result: PassResult) -> bool:
        return bool(
            result.admitted
            or result.preempted
            or result.rebuilt
            or time.monotonic() - self.last_recorded >= self.heartbeat_seconds
        )

    def _record(self, started, t0, trigger: str, result: PassResult) -> None:
        label = f"warm:{trigger}"
        if result.rebuilt:
            label = f"warm:reload:{result.rebuilt}"
        if result.drift:
            label = f"warm:drift:{result.drift}"
        AdmissionRun.objects.create(
            started_at=started,
            duration_ms=(time.perf_counter() - t0) * 1000,
            trigger=label[:32],
            admitted=result.admitted,
            preempted=result.preempted,
            pending=result.pending,
        )
        self.last_recorded = time.monotonic()


__all__ = ["STARTING", "WarmScheduler", "WarmState", "config_fingerprint"]


class Carrier:
    """Starts and stops on the cluster what the passes decided, in a thread of the scheduler process: the
    next pass does not wait for the cluster's API, and nothing waits for a Celery worker to be free. The
    thread has its own database connection; claims (loop.carry_out) keep it apart from beat's retries."""

    def __init__(self):
        import threading

        self.wanted = threading.Event()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name="carrier", daemon=True)
        self.thread.start()

    def __call__(self) -> None:
        self.wanted.set()

    def _run(self) -> None:
        from django.db import close_old_connections

        from scheduling.loop import carry_out

        while not self.stopping:
            if not self.wanted.wait(1.0):
                continue
            self.wanted.clear()
            try:
                carry_out()
            except Exception:
                log.exception("carrying out the scheduler's decisions failed; beat's cluster tick retries")
                close_old_connections()

    def stop(self) -> None:
        self.stopping = True
        self.wanted.set()
        self.thread.join(10)


# --- one scheduler at a time ----------------------------------------------------------------------------

LEADER_KEY = 0x73636864  # "schd": the session-level advisory lock the scheduler process holds


def scheduler_leads() -> bool:
    """Whether a scheduler process holds the leader lock now (PostgreSQL; elsewhere: unknown, so False)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = %s"
            " AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))",
            [LEADER_KEY],
        )
        return bool(cursor.fetchone()[0])


class Leadership:
    """Which scheduler process admits. PostgreSQL: a session-level advisory lock on the process's own
    connection, released by the server the moment that process or its connection dies, so a standby takes
    over on its next try (every second). SQLite (one host): an exclusive lock on a file under var/."""

    def __init__(self):
        self.held = False
        self._file = None

    def try_take(self) -> bool:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [LEADER_KEY])
                self.held = bool(cursor.fetchone()[0])
        else:
            import fcntl

            from django.conf import settings

            self._file = self._file or open(settings.VAR_DIR / "scheduler.lock", "a")  # noqa: SIM115
            try:
                fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.held = True
            except OSError:
                self.held = False
        return self.held

    def still_held(self) -> bool:
        """False when the connection that held the lock was lost (the server released it)."""
        if not self.held or connection.vendor != "postgresql":
            return self.held
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
                    " AND classid = 0 AND objid = %s AND granted",
                    [LEADER_KEY],
                )
                self.held = bool(cursor.fetchone()[0])
        except Exception:
            self.held = False
        return self.held

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        if connection.vendor == "postgresql":
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [LEADER_KEY])
            except Exception:
                pass  # the connection is gone: the server released the lock with it
        elif self._file is not None:
            import fcntl

            fcntl.flock(self._file, fcntl.LOCK_UN)
