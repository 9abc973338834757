"""Reservations (nobody starves): Slurm-style backfill over the scheduler's live state.

Every team's *head* (the first pending workload in its queue order) is planned, one head at a time in
*planning order* (highest priority, then earliest submit, then name): its planned start is the earliest
instant T >= now at which it fits, without preempting anyone, throughout [T, T + duration), supposing that
running work ends at admitted_at + duration, that nothing else is admitted, and that the heads planned
before it hold their quota and nodes over their own planned runs. A workload is then admitted only where
that delays no head it must respect (see `Scheduler.reservation_allows`).

The planner never copies the cluster: it replays future ends and holds onto the scheduler's own quota book
and node pools, checks with the same `check` and `place` the admission uses, and undoes every change.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from typing import TYPE_CHECKING

from .queues import RUNNING
from .quota import EPS, FITS, INF

if TYPE_CHECKING:
    from .admission import Scheduler
    from .queues import Job

RELEASE, HOLD_END, HOLD_START = 0, 1, 2  # at one instant, ends come before starts


class Hold:
    __slots__ = ("job", "f", "start", "end", "nodes", "waits_for")

    def __init__(self, job, f, start, end, nodes, waits_for):
        self.job, self.f, self.start, self.end, self.nodes, self.waits_for = job, f, start, end, nodes, waits_for


class Extra:
    """A workload tried as if admitted now (a trial plan): it runs on `f` from now until `end`."""

    __slots__ = ("job", "f", "nodes", "end")

    def __init__(self, job, f, nodes, end):
        self.job, self.f, self.nodes, self.end = job, f, nodes, end


def planning_key(job: Job) -> tuple:
    return (-job.priority, job.submit, job.name)


def end_of(job: Job, start: float) -> float:
    return INF if job.duration is None else start + job.duration


class Plan:
    """The heads in planning order and each one's hold (None: it cannot start in finite time)."""

    def __init__(self, heads: list[Job], holds: dict[Job, Hold | None]):
        self.heads = heads
        self.holds = holds

    def start(self, job: Job) -> float:
        hold = self.holds.get(job)
        return INF if hold is None else hold.start


class Planner:
    skip_untouched = True  # see plan(); the tests compare decisions with it off

    def __init__(self, s: Scheduler):
        self.s = s
        self._releases: dict[tuple, tuple[int, list]] = {}
        self._base: dict[tuple, tuple[list, dict]] = {}  # key -> (unclamped end events sorted, job -> its event)

    # ----- the plan -------------------------------------------------------------------------------------

    def plan(
        self,
        heads: list[Job],
        extra: Extra | None = None,
        prior: Plan | None = None,
        keep: int = 0,
        rivals: frozenset | set = frozenset(),
    ) -> Plan:
        """Plan `heads` (already in planning order); `extra` is applied first as if admitted now. The first
        `keep` heads take their holds from `prior` unchanged (the caller knows they cannot move).

        Holds that start now are applied to the book and pools for the rest of the pass (and undone at its
        end), so each later head starts from that state instead of replaying them.

        A trial (`extra` with `prior`, the plan without it) only takes room away. While every head before
        one holds what it held in `prior` and `extra` is not one of them, that head cannot start earlier than
        in `prior` (whether a job fits grows with the room free), so its search begins at its prior start.
        A head of `rivals` that cannot start by its prior start ends the trial there: the caller asks only
        whether one is delayed, and the first delayed is the answer.
        """
        s = self.s
        now = s.now
        held = Timeline(s, None)
        holds: dict[Job, Hold | None] = {}
        future: dict[int, list[Hold]] = {}
        ends: dict[int, list[tuple]] = {}
        if extra is not None:
            held.put(extra.job, extra.f, extra.nodes, 1)
            if extra.end != INF:
                ends.setdefault(extra.f, []).append(
                    (max(extra.end, now), RELEASE, extra.job.seq, extra.job, extra.nodes)
                )
        monotone = extra is not None and prior is not None and extra.job not in prior.holds
        # A trial changes the state on extra's instance type only; a head whose hold comes out different from the
        # prior plan's changes it on its own types. A head that can run only on types nothing has changed is
        # planned as the prior plan planned it, with the same state and the same holds before it there (the
        # prior plan is the plan of this state): it keeps its hold without a search.
        trial = extra is not None and prior is not None and self.skip_untouched
        touched = {extra.f} if trial else set()
        if trial and prior.holds.get(extra.job) is not None:
            touched.add(prior.holds[extra.job].f)
        overdue: dict[tuple, int] = {}  # (flavor, scope of its releases) -> overdue ends already applied
        try:
            for k, head in enumerate(heads):
                best = None
                if k < keep:
                    best = prior.holds.get(head)
                    holds[head] = best
                    if best is not None:
                        self._hold(best, k, held, future, ends)
                    continue
                if monotone:
                    before = prior.holds.get(head)
                    if before is not None and (before.f != extra.f or before.start > extra.end):
                        # the trial changes nothing it could use: room only on another instance type (a
                        # head's start there cannot move, and on extra's type it can only grow later), or
                        # only before its run begins (where it did not fit anyway); same state, same hold
                        holds[head] = before
                        self._hold(before, k, held, future, ends)
                        continue
                if trial and not monotone and head in prior.holds and touched.isdisjoint(s.flavors_for(head)):
                    before = holds[head] = prior.holds[head]
                    if before is not None:
                        self._hold(before, k, held, future, ends)
                    continue
                floor = prior.start(head) if monotone else now
                deadline = prior.start(head) if head in rivals else INF
                if floor == INF:  # it could not start before; with less room it cannot now (nor be delayed)
                    holds[head] = None
                    continue
                for f in s.flavors_for(head):
                    key = s.ends_key(f, head.team.group)
                    applied = overdue.get(key)
                    if applied is None:
                        applied = overdue[key] = self._apply_overdue(f, head.team.group, held)
                    found = self.earliest(head, f, future.get(f, ()), ends.get(f, ()), floor, deadline, applied)
                    if found is not None and (best is None or found.start < best.start - EPS):
                        best = found
                holds[head] = best
                if best is None and deadline != INF:  # a rival delayed: the trial has its answer
                    return Plan(heads[: k + 1], holds)
                if best is not None:
                    self._hold(best, k, held, future, ends)
                if (trial or monotone) and not _same_hold(best, prior.holds.get(head)):
                    if trial:
                        touched.update(s.flavors_for(head))
                    monotone = False
            return Plan(heads, holds)
        finally:
            held.undo(0)

    def _apply_overdue(self, f: int, group, held: Timeline) -> int:
        """Apply to `held` the ends of running work on `f` due by now (work past its expected end is supposed
        to end now), once per plan rather than once per head; how many, the first events of `releases`."""
        events = self.releases(f, group)
        now, k = self.s.now, 0
        while k < len(events) and events[k][0] <= now:
            _, _, _, job, nodes = events[k]
            held.put(job, f, nodes, -1)
            k += 1
        return k

    def _hold(self, hold: Hold, k: int, held: Timeline, future, ends) -> None:
        if hold.start <= self.s.now:
            held.put(hold.job, hold.f, hold.nodes, 1)
            if hold.end != INF:
                insort(ends.setdefault(hold.f, []), (hold.end, HOLD_END, -1 - k, hold.job, hold.nodes), key=_order)
        else:
            future.setdefault(hold.f, []).append(hold)

    def releases(self, f: int, group) -> list:
        """Events (end, RELEASE, seq, job, nodes) of running work on `f` whose end is known, sorted; on a flavor
        no cohort shares with another (no nodes, no capacity limit, nothing uncovered), only the group's own
        work counts. Work past its expected end is supposed to end now.

        The ends are kept sorted as work starts and stops (the scheduler lists what changed), not sorted
        afresh after every admission; only the overdue ones, clamped to now, are ordered again."""
        s = self.s
        shared = s.shared_flavor[f]
        key = s.ends_key(f, group)
        version = (s.running_version.get(key, 0), s.now)
        cached = self._releases.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        base = self._base.get(key)
        changed = s.running_changes.pop(key, ())
        if base is None or changed is None:
            teams = s.teams if shared else [t for t in s.teams if t.group == group]
            entries = {job: _end_event(job) for team in teams for job in team.running[f] if _ends(job)}
            base = self._base[key] = (sorted(entries.values(), key=_order), entries)
        else:
            events, entries = base
            for job in dict.fromkeys(changed):
                old = entries.pop(job, None)
                if old is not None:
                    del events[bisect_left(events, old[:3], key=_order)]
                if job.state == RUNNING and job.flavor == f and _ends(job) and (shared or job.team.group == group):
                    entries[job] = event = _end_event(job)
                    insort(events, event, key=_order)
        events = base[0]
        now = s.now
        due = bisect_right(events, (now, RELEASE, float("inf")), key=_order)
        if due:
            out = sorted(((now, RELEASE, e[2], e[3], e[4]) for e in events[:due]), key=_order) + events[due:]
        else:
            out = list(events)
        self._releases[key] = (version, out)
        return out

    def earliest(
        self,
        job: Job,
        f: int,
        holds=(),
        ends=(),
        not_before: float = 0.0,
        not_after: float = INF,
        applied: int = 0,
    ) -> Hold | None:
        """The earliest hold for `job` on flavor `f`, the state being the current one plus what started now;
        `holds` are the earlier heads' later holds there, `ends` when what started now ends. The search
        looks at no instant before `not_before` (the caller knows it cannot fit there) and gives up (None)
        past `not_after`. The first `applied` release events (ends due by now) are already in the state."""
        s = self.s
        team = job.team.book
        pool = s.pools[f]
        limit = team.limit[f]
        if any(job.total[r] > limit[r] + EPS for r in job.nz):
            return None
        if pool is not None and any(job.per_pod[r] > pool.capacity[r] + EPS for r in job.nz):
            return None
        capacity = s.book.capacity_total[f]
        if any(job.total[r] > capacity[r] + EPS for r in job.nz):
            return None
        events = self.releases(f, job.team.group)
        if holds or ends:
            others = list(ends)
            for i, hold in enumerate(holds):
                others.append((hold.start, HOLD_START, -(10**9) - i, hold.job, hold.nodes))
                if hold.end != INF:
                    others.append((hold.end, HOLD_END, -(10**9) - i, hold.job, hold.nodes))
            others.sort(key=_order)
            events = _merge(events, others)
            starts = [j for j, e in enumerate(events) if e[1] == HOLD_START] if holds else []
        else:
            starts = []
        # nodes are brought up to date only where the quota fits and enough pods fit by the key resource
        timeline = Timeline(s, f, lazy=True, need=job.per_pod[pool.key] if pool is not None else 0.0)
        try:
            i, n = applied, len(events)
            now = s.now
            while i < n and events[i][0] <= now:
                timeline.apply(events[i])
                i += 1
            at = now
            if not_before > now + EPS:  # skip to the last instant at or before it without trying any
                i, last = timeline.advance(events, i, not_before + EPS)
                at = at if last is None else last
            while True:
                found = self._try(job, f, at, events, i, timeline, starts)
                if found is not None:
                    nodes, _ = found
                    waits_for = [e[3] for e in events[:i] if e[0] == at and at > now and e[1] != HOLD_START]
                    return Hold(job, f, at, end_of(job, at), nodes, waits_for)
                if i >= n or events[i][0] > not_after + EPS:
                    return None
                if timeline.need:  # on to the next instant at which enough pods fit on the nodes
                    i, at = timeline.advance(events, i, not_after + EPS, job.pods)
                    if timeline.pods < job.pods:
                        return None
                    continue
                at = events[i][0]
                while i < n and events[i][0] == at:
                    timeline.apply(events[i])
                    i += 1
        finally:
            timeline.close()

    def _try(self, job: Job, f: int, at: float, events, i: int, timeline: Timeline, starts=()):
        """(nodes, True) if `job` fits from `at` throughout its run, else None. The state is the one at `at`;
        `starts` are the places in `events` of the holds that start (only they can stop a run that began)."""
        s = self.s
        team = job.team.book
        if s.book.check(team, f, job.total, job.nz)[0] != FITS:
            return None
        pool = s.pools[f]
        if timeline.need:
            if timeline.pods < job.pods:
                return None
            timeline.sync()
        else:
            timeline.sync()
            if pool is not None and job.per_pod[pool.key] > 0 and pool.pods_fit(job.per_pod[pool.key]) < job.pods:
                return None
        end = end_of(job, at)
        last = None
        for j in starts[bisect_left(starts, i) :]:
            if events[j][0] >= end - EPS:
                break
            last = j
        if last is None:
            if pool is None:
                return None, True
            nodes = pool.place(job.per_pod, job.nz, job.pods)
            return None if nodes is None else (nodes, True)
        # Holds start during the run: the job must fit at each of those instants, on the same nodes. The
        # events between two such instants are applied as one (an inner timeline, put back at its close).
        lowest: dict[int, list[float]] = {}
        at_start: dict[int, list[float]] = {}
        inner = Timeline(s, f)
        try:
            j, n = i, len(events)
            while j <= last:
                t = events[starts[bisect_left(starts, j)]][0]  # the next instant a hold starts
                if pool is not None:
                    k = j
                    while k < n and events[k][0] <= t:
                        for node in events[k][4] or ():
                            if node not in at_start:  # as it stood at `at`: nothing before touched it
                                at_start[node] = list(pool.free[node])
                                lowest[node] = list(pool.free[node])
                        k += 1
                j, _ = inner.advance(events, j, t)
                if s.book.check(team, f, job.total, job.nz)[0] != FITS:
                    return None
                if pool is not None:
                    for node, low in lowest.items():
                        free = pool.free[node]
                        for r in job.nz:
                            if free[r] < low[r]:
                                low[r] = free[r]
        finally:
            inner.close()
        if pool is None:
            return None, True
        extra = {node: [lo - st for lo, st in zip(lowest[node], at_start[node], strict=True)] for node in lowest}
        nodes = pool.place(job.per_pod, job.nz, job.pods, extra)
        return None if nodes is None else (nodes, True)


def _ends(job: Job) -> bool:
    return job.duration is not None and job.admitted_at is not None


def _end_event(job: Job) -> tuple:
    return (job.admitted_at + job.duration, RELEASE, job.seq, job, job.nodes)


def _same_hold(a: Hold | None, b: Hold | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.f == b.f and abs(a.start - b.start) <= EPS and a.end == b.end and a.nodes == b.nodes


def _order(event) -> tuple:
    return event[:3]


def _merge(events: list, others: list) -> list:
    """`events` and the few `others` (both sorted by _order) as one sorted list: the long list is copied in
    slices between the others' places, found by bisection."""
    out, at = [], 0
    for event in others:
        cut = bisect_right(events, event[:3], at, key=_order)
        out += events[at:cut]
        out.append(event)
        at = cut
    out += events[at:]
    return out


class Timeline:
    """Ends and holds applied onto the live quota book and node pools, with an undo log.

    A lazy timeline applies each change to the quota book at once but to the nodes only at `sync()`: the
    earliest-start search steps through many instants where the quota alone rules the job out. Given `need`
    (a pod's amount of the pool's key resource), it also keeps `pods`, how many such pods fit on the nodes
    as they stand with every change applied (what `pool.pods_fit(need)` answers after a sync), from the few
    nodes each change touches: most instants where a gang does not fit are ruled out without a sync.

    A timeline of one instance type keeps the quota rows it changes as they were (copied on first change),
    so `close()` puts them back at once, exactly, instead of reversing every change; `advance` applies a run
    of events as one net change per team (the search skips instants it need not try that way).
    """

    def __init__(self, s: Scheduler, f: int | None, lazy: bool = False, need: float = 0.0):
        self.s, self.f = s, f
        self.log: list[tuple] = []  # (job, flavor, nodes, sign, whether its quota was applied on its own)
        self.lazy = lazy
        self.synced = 0  # entries of the log before this one have reached the nodes
        self.saved: dict[int, tuple] | None = {} if f is not None else None  # team idx -> (book, usage row)
        self.saved_cohorts: dict[str, tuple] = {}
        self.saved_totals: tuple | None = None
        pool = s.pools[f] if f is not None else None
        self.need = need if pool is not None and need > 0 else 0.0
        if self.need:
            self.key = pool.key
            self.pods = pool.pods_fit(need)
            self.shadow: dict[int, float] = {}  # node -> its free key amount with every change applied

    def apply(self, event) -> None:
        _, kind, _, job, nodes = event
        self.put(job, self.f, nodes, 1 if kind == HOLD_START else -1)

    def put(self, job: Job, f: int, nodes, sign: int) -> None:
        if self.saved is not None and job.team.idx not in self.saved:
            self._save(job.team.book)
        self.s.book.apply(job.team.book, f, job.total, job.nz, sign)
        self.log.append((job, f, nodes, sign, True))
        if self.need and nodes:
            self._count(job, nodes, sign)
        if not self.lazy:
            self.sync()

    def advance(self, events, i: int, until: float, pods: int | None = None) -> tuple[int, float | None]:
        """Apply events[i:] up to the instant `until` (inclusive) with one quota change per team; returns the
        index of the first event not applied and the instant of the last applied (None if none was). With
        `pods` (a timeline given `need`), stop after the first instant at which that many pods fit by the key
        resource: at the instants before it the job cannot fit, whatever the quota says."""
        f, book = self.f, self.s.book
        net: dict[int, list] = {}
        n, at = len(events), None
        need = self.need
        if need:
            key, free, count = self.key, self.s.pools[f].free, self.pods
        log = self.log
        while i < n and events[i][0] <= until:
            at = events[i][0]
            while i < n and events[i][0] == at:  # every event of the instant
                _, kind, _, job, nodes = events[i]
                sign = 1 if kind == HOLD_START else -1
                entry = net.get(job.team.idx)
                if entry is None:
                    entry = net[job.team.idx] = [job.team.book, [0.0] * len(job.total), set()]
                vec = entry[1]
                for r in job.nz:
                    vec[r] += sign * job.total[r]
                entry[2].update(job.nz)
                log.append((job, f, nodes, sign, False))
                if need and nodes:
                    amount = sign * job.per_pod[key]
                    for node in nodes:
                        count += self._shift(node, amount, free)
                i += 1
            if pods is not None and count >= pods:
                break
        for tb, vec, nz in net.values():
            if tb.idx not in self.saved:
                self._save(tb)
            book.apply(tb, f, vec, sorted(nz), 1)
        if need:
            self.pods = count
        if not self.lazy:
            self.sync()
        return i, at

    def _save(self, tb) -> None:
        f, book = self.f, self.s.book
        self.saved[tb.idx] = (tb, list(tb.usage[f]))
        cohort = tb.cohort
        if cohort is not None and cohort.name not in self.saved_cohorts:
            self.saved_cohorts[cohort.name] = (cohort, list(cohort.draw[f]), list(cohort.excess[f]))
        if self.saved_totals is None:
            self.saved_totals = (list(book.used[f]), list(book.excess_total[f]))

    def _count(self, job: Job, nodes, sign: int) -> None:
        """Keep `pods` as the nodes change."""
        free = self.s.pools[self.f].free
        amount = sign * job.per_pod[self.key]
        for node in nodes:
            self.pods += self._shift(node, amount, free)

    def _shift(self, node: int, amount: float, free) -> int:
        """Take `amount` of the key resource on `node` (the same arithmetic, in the same order, as
        NodePool.take); returns how many more pods of `need` fit there."""
        shadow, need = self.shadow, self.need
        old = shadow.get(node)
        if old is None:
            old = free[node][self.key]
        new = old - amount
        if -EPS < new < EPS:
            new = 0.0
        shadow[node] = new
        return int((new + EPS) // need) - int((old + EPS) // need)

    def sync(self) -> None:
        log, pools = self.log, self.s.pools
        for k in range(self.synced, len(log)):
            job, f, nodes, sign, _ = log[k]
            if pools[f] is not None and nodes:
                pools[f].take(nodes, job.per_pod, job.nz, sign)
        self.synced = len(log)

    def mark(self) -> int:
        return len(self.log)

    def close(self) -> None:
        """Undo everything (the timeline is not used again): the quota rows as they were, the nodes changed back."""
        log, pools = self.log, self.s.pools
        if self.saved is None:
            self.undo(0)
        else:
            self._restore()
            for k in range(self.synced - 1, -1, -1):
                job, f, nodes, sign, _ = log[k]
                if pools[f] is not None and nodes:
                    pools[f].take(nodes, job.per_pod, job.nz, -sign)
            log.clear()
            self.synced = 0
            if self.need:
                self.shadow, self.pods = {}, None  # spent

    def undo(self, mark: int) -> None:
        log, book, pools = self.log, self.s.book, self.s.pools
        while len(log) > mark:
            job, f, nodes, sign, alone = log.pop()
            if not alone:
                raise RuntimeError("undo(mark) cannot reach into a run applied by advance(); close() can")
            book.apply(job.team.book, f, job.total, job.nz, -sign)
            if self.need and nodes:
                self._count(job, nodes, -sign)
            if len(log) < self.synced:
                self.synced = len(log)
                if pools[f] is not None and nodes:
                    pools[f].take(nodes, job.per_pod, job.nz, -sign)

    def _restore(self) -> None:
        f, book = self.f, self.s.book
        for tb, row in self.saved.values():
            tb.usage[f][:] = row
        for cohort, draw, excess in self.saved_cohorts.values():
            cohort.draw[f][:] = draw
            cohort.excess[f][:] = excess
        if self.saved_totals is not None:
            book.used[f][:], book.excess_total[f][:] = self.saved_totals
        self.saved.clear()
        self.saved_cohorts.clear()
        self.saved_totals = None
