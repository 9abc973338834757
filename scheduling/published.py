"""The engine's plan, published: what the pages read instead of planning the whole cluster per request.

The scheduler process (scheduling/warm.py) publishes after each pass that changed something, the cold
admission loop (scheduling/loop.py) after each run: every pending job's place in the engine's planning order
and in its team's queue, the heads' reservations, the estimates pages asked for, and every team's standing,
all as the engine's own Decisions said (engine.warm.decisions / engine.decide). One row per publication
(PublishedPlan), compact: the planning order as packed job ids, the rest small JSON maps.

A page takes the latest publication when it is current (`latest()`): planned under the configuration that
holds now, reflecting every job event older than LAG_SECONDS, and confirmed by its publisher within
FRESH_SECONDS. Otherwise, or when it lacks what the page shows (a job submitted since, an estimate nobody
asked for yet), the page asks the engine as before (engine.standing on a fresh snapshot) and publishes that,
so the next page reads it; the estimate it asked for is carried into the scheduler's next publications.
"""

from __future__ import annotations

import json
import logging
import math
import time
from array import array
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from scheduling import engine
from scheduling.engine import warm as engine_warm
from scheduling.models import JobEvent, PublishedPlan

log = logging.getLogger(__name__)

FRESH_SECONDS = 60.0  # not confirmed by its publisher for this long: not used (an idle scheduler passes every 15 s)
LAG_SECONDS = 30.0  # a job event older than this that the publication does not reflect makes it stale
CONFIRM_SECONDS = 1.0  # the scheduler confirms the latest publication at most this often
REPUBLISH_SECONDS = 30.0  # and publishes afresh at least this often (time moves the plan: work overruns)
KEEP = 3  # publications kept (the newest is read; older ones only serve reads that began before it)
ASKED_MAX = 50  # estimates carried into later publications (each costs the scheduler a trial plan)
ASKED_SECONDS = 600.0  # an estimate no page asked for again in this long is dropped
PUBLISH_MIN_SECONDS = 1.0  # the scheduler publishes at most this often
COST_SHARE = 10  # and waits this many times a publication's cost after it (50,000 pending: about 1 s each)
# A change waits while the end of a job is due (its room is given out first: a publication after a pass delays
# the next pass by its cost), for at most this long after the last publication.
YIELD_TO_ENDS_SECONDS = 5.0


# --- writing ------------------------------------------------------------------------------------------------


INF_MARK = "~inf"  # a map holding "inf" strings has this key, so reading it converts them back (else it need not)


def _finite(value):
    """JSON for PostgreSQL: infinity as the string "inf" (read back by _number)."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _marked(values: dict) -> dict:
    """`values` for a JSON column, marked when it holds an infinity (rare: the strict encoder finds out)."""
    try:
        json.dumps(values, allow_nan=False)
    except ValueError:
        return {**_finite(values), INF_MARK: True}
    return values


def _number(value):
    if value == "inf":
        return math.inf
    if value == "-inf":
        return -math.inf
    if isinstance(value, dict):
        return {k: _number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_number(v) for v in value]
    return value


JOB, TEAM = "j", "t:"  # key prefixes in the JSON maps: a key of digits alone would be read as an array index
TEAM_FIELDS = ("quota", "borrowing_limit", "usage", "borrowed", "lent", "fair_share", "pending", "borrowable")


def publish(
    decisions: engine.Decisions,
    *,
    engine_now: float,
    event_top: int,
    config: tuple,
    source: str,
    asked: dict[str, float] | None = None,
) -> PublishedPlan | None:
    """Write what `decisions` say about the pending jobs and the teams (decisions.teams may be empty: then the
    pages that show teams compute them). A page's publication never replaces a newer one."""
    if source == "page" and PublishedPlan.objects.filter(event_top__gt=event_top).exists():
        return None
    names = sorted(decisions.plans, key=lambda name: decisions.plans[name].rank)
    order = array("q", list(map(int, names)))
    team_ranks = array("i", [decisions.plans[name].team_rank for name in names])
    holds = {
        JOB + name: [plan.planned_start, plan.instance_type, plan.waits_for]
        for name, plan in decisions.plans.items()
        if plan.planned_start is not None
    }
    asked = asked or {}
    estimates = {
        JOB + name: [decisions.plans[name].estimated_start, decisions.plans[name].instance_type, at]
        for name, at in asked.items()
        if name in decisions.plans and not decisions.plans[name].head
    }
    teams = {TEAM + name: {f: getattr(status, f) for f in TEAM_FIELDS} for name, status in decisions.teams.items()}
    now = timezone.now()
    row = PublishedPlan(
        published_at=now,
        confirmed_at=now,
        source=source,
        config=repr(config),
        event_top=event_top,
        engine_now=engine_now,
        order=order.tobytes(),
        team_ranks=team_ranks.tobytes(),
        queued={TEAM + name: status.pending for name, status in decisions.teams.items()},
        holds=_marked(holds),
        estimates=_marked(estimates),
        teams=_marked(teams) if teams else None,
    )
    own_transaction = not connection.in_atomic_block  # (the cold loop publishes inside its run's transaction)
    with transaction.atomic():
        if own_transaction and connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # a cache of the engine's answer: a crash may lose it, no harm
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        row.save()
        PublishedPlan.objects.filter(pk__lte=row.pk - KEEP).delete()
    return row


def asked() -> dict[str, float]:
    """The estimates pages asked for lately (job name -> when), newest first, to carry into a publication."""
    row = PublishedPlan.objects.order_by("-pk").values_list("estimates", flat=True).first()
    if not row:
        return {}
    horizon = time.time() - ASKED_SECONDS
    recent = sorted(
        ((key[len(JOB) :], e[2]) for key, e in row.items() if key != INF_MARK and e[2] >= horizon), key=lambda e: -e[1]
    )
    return dict(recent[:ASKED_MAX])


def max_event_id() -> int:
    return JobEvent.objects.aggregate(top=Max("pk"))["top"] or 0


def current_config() -> tuple:
    from scheduling.warm import config_fingerprint  # the scheduler's own test of "the configuration changed"

    return config_fingerprint()


# --- the publishers: the scheduler process and the cold loop -----------------------------------------------


class Pace:
    """When the scheduler last published, what it cost, and whether a change waits to be published. Kept by the
    scheduler (WarmScheduler.pace) across states read whole; a new one on start, takeover and a configuration
    change, which publish at once."""

    def __init__(self):
        self.at = self.cost = self.confirmed_at = 0.0
        self.pending_change = self.published = False
        self.confirmed_top = 0

    def due(self) -> bool:
        since = time.monotonic() - self.at
        if since < max(PUBLISH_MIN_SECONDS, COST_SHARE * self.cost):
            return False
        from scheduling.loop import wake_up_due

        return since >= YIELD_TO_ENDS_SECONDS or not wake_up_due()

    def confirm_due(self, top: int) -> bool:
        since = time.monotonic() - self.confirmed_at
        return since >= CONFIRM_SECONDS and (top != self.confirmed_top or since >= FRESH_SECONDS / 4)


def after_pass(state, result, applied, now, pace: Pace) -> None:
    """The scheduler process, after a pass committed: publish its plan if the pass changed anything (at most once
    a second and about a COST_SHARE-th of the scheduler's time, and not while a job's end waits to be served:
    a change waits for a later pass, and an idle scheduler passes every second), else confirm that the latest
    publication is still current."""
    try:
        top = max([state.top, *(event.pk for event in applied.events if event.pk)])
        changed = result.admitted or result.preempted or result.changed_jobs or result.rebuilt
        changed = changed or time.monotonic() - pace.at >= REPUBLISH_SECONDS
        if changed or pace.pending_change:
            if not pace.due():
                pace.pending_change = True
                return
            t0 = time.monotonic()
            want = asked()
            decisions = engine_warm.decisions(state.scheduler, set(), teams=True, explain_only=(), estimate=tuple(want))
            config = state.fingerprint
            publish(decisions, engine_now=now.timestamp(), event_top=top, config=config, source="warm", asked=want)
            pace.at, pace.cost = time.monotonic(), time.monotonic() - t0
            pace.pending_change, pace.published = False, True
            pace.confirmed_at, pace.confirmed_top = time.monotonic(), top
        elif pace.published and pace.confirm_due(top):
            # nothing the plan depends on changed since it was published (by this pass or a page since)
            newest = PublishedPlan.objects.order_by("-pk").values_list("pk", flat=True).first()
            PublishedPlan.objects.filter(pk=newest, event_top__lte=top, config=repr(state.fingerprint)).update(
                confirmed_at=timezone.now(), event_top=top
            )
            pace.confirmed_at, pace.confirmed_top = time.monotonic(), top
    except Exception:
        log.exception("publishing the scheduler's plan failed; pages compute it themselves meanwhile")


def after_run(decisions: engine.Decisions, *, now) -> None:
    """The cold loop, inside its run's transaction after writing the decisions: publish them (in a savepoint:
    a failure here never undoes the run)."""
    try:
        with transaction.atomic():
            config = current_config()
            publish(decisions, engine_now=now.timestamp(), event_top=max_event_id(), config=config, source="loop",
                    asked={name: at for name, at in asked().items() if name in decisions.plans})  # fmt: skip
    except Exception:
        log.exception("publishing the loop's plan failed; pages compute it themselves meanwhile")


# --- reading ------------------------------------------------------------------------------------------------


@dataclass
class JobInPlan:
    plan: engine.Plan
    team_queued: int
    cluster_queued: int


def latest():
    """The newest publication (its pk and freshness only), when it is current; None when there is none, or it
    is stale (see the module's docstring)."""
    fields = ("pk", "published_at", "confirmed_at", "config", "event_top")
    row = PublishedPlan.objects.only(*fields).order_by("-pk").first()
    if row is None:
        return None
    now = timezone.now()
    if (now - row.confirmed_at).total_seconds() > FRESH_SECONDS:
        return None
    unseen = JobEvent.objects.filter(pk__gt=row.event_top).order_by("pk").values_list("at", flat=True).first()
    if unseen is not None and (now - unseen).total_seconds() > LAG_SECONDS:
        return None
    if row.config != repr(current_config()):
        return None
    return row


_payloads: dict[tuple, object] = {}  # what a publication holds never changes: read once per process


def _payload(row: PublishedPlan, field: str):
    key = (row.pk, row.published_at, field)  # with the time: an id may come again after a rollback (SQLite)
    if key not in _payloads:
        raw = PublishedPlan.objects.filter(pk=row.pk).values_list(field, flat=True).first()
        if len(_payloads) >= 16:
            _payloads.clear()
        _payloads[key] = None if raw is None else _parse(field, raw)
    return _payloads[key]


def _parse(field: str, raw):
    if field in ("order", "team_ranks"):
        values = array("q" if field == "order" else "i")
        values.frombytes(bytes(raw))
        return values
    convert = _number if INF_MARK in raw else (lambda values: values)
    prefix = len(JOB) if field in ("holds", "estimates") else len(TEAM)
    return {key[prefix:]: convert(values) for key, values in raw.items() if key != INF_MARK}


def job_in_plan(job) -> JobInPlan | None:
    """The job's place and start in the current publication; None when there is none or it lacks them (a job
    newer than it, or a non-head's estimate nobody asked for yet)."""
    name = str(job.pk)
    row = latest()
    if row is None:
        return None
    order = _payload(row, "order")
    queued = _payload(row, "queued") or {}
    try:
        index = order.index(job.pk)
    except (AttributeError, ValueError):
        return None
    if job.team.name not in queued:
        return None
    ranks = _payload(row, "team_ranks")
    plan = engine.Plan(rank=index + 1, team_rank=ranks[index], head=ranks[index] == 1)
    hold = (_payload(row, "holds") or {}).get(name)
    if hold:
        plan.planned_start, plan.instance_type, plan.waits_for = hold
        plan.estimated_start = plan.planned_start
    elif not plan.head:
        estimate = (_payload(row, "estimates") or {}).get(name)
        if not estimate:
            return None
        plan.estimated_start, plan.instance_type, _ = estimate
    return JobInPlan(plan, queued[job.team.name], len(order))


def team_statuses(names: list[str] | None = None) -> dict[str, dict] | None:
    """Teams' standing (TeamStatus fields) from the current publication: all, or those named; None when there
    is none current or it has no team standing."""
    row = latest()
    teams = _payload(row, "teams") if row is not None else None
    if teams is None:
        return None
    if names is None:
        return dict(teams)
    return {name: teams[name] for name in names if name in teams}


def page_standing(*, estimate: tuple[str, ...] = (), now=None) -> engine.Decisions:
    """What a page computes when no current publication has what it shows: the engine's standing of the
    database now (as pages did before publications), published for the pages after it."""
    from scheduling.snapshot import build_snapshot

    top = max_event_id()  # read first: anything later counts as unseen
    now = now or timezone.now()
    want = asked()
    for name in estimate:
        want[name] = time.time()
    snapshot = build_snapshot(now=now)
    config = current_config()  # after the snapshot, as the scheduler: reading the policy may have created its row
    decisions = engine.standing(snapshot, estimate=tuple(want))
    try:
        publish(decisions, engine_now=now.timestamp(), event_top=top, config=config, source="page", asked=want)
    except Exception:  # a read-only replica, say: the page still shows what it computed
        log.warning("could not publish the plan a page computed", exc_info=True)
    return decisions
