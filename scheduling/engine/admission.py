"""The scheduler: queues, the settle loop and admission, kept incrementally across events.

`Scheduler` holds the whole state (usage ledger, nodes, queues). `settle(now)` repeats admission and
preemption until nothing changes. Each team offers one candidate, the first of its queue heads that can be
admitted (possibly with preemption); candidates wait in a heap ordered by the idle-compute policy and are
re-checked when popped, since others' admissions may have used the room. A team is offered at its turn: it
waits in the heap at a key none of its candidates can come before, and its candidates are looked at (victims
searched, reservations checked) only when that key comes up. A team with no candidate is *blocked* and is not
looked at again until something it could use is released.
"""

from __future__ import annotations

import heapq
import time
from bisect import bisect_left, insort

from . import preemption
from .fairshare import dominant_share, fair_shares
from .model import InstanceType, Policy, Team
from .placement import NodePool
from .queues import FINISHED, PENDING, RUNNING, Job, TeamQueue
from .quota import EPS, FITS, INF, QuotaBook, TeamBook
from .reservations import Extra, Plan, Planner, Timeline, end_of, planning_key

MAX_PLAIN_PASSES = 4  # after a settle that needed protection from wasted evictions (see settle)
MAX_RUNNING_CHANGES = 4096  # starts and stops kept for the planner's list of ends, per instance type and scope
MAX_REMEMBERED_REFUSALS = 1 << 16  # refused trials kept (emptied beyond that; they are tried again)
NONE_PROTECTED: frozenset = frozenset()
UNCHECKED = -1  # the `changes` of a candidate pushed before its reservation check (see _offer): checked when popped
UNOFFERED = -2  # the `changes` of a team pushed before its candidates were looked at (see _offer): offered when popped
MAX_PLANNED_HEADS = 16  # per scope, like Slurm's bf_max_job_test: heads further down hold no reservation


class RetryMemo:
    """What a settle's tries were answered in the states they went through (see Scheduler.reservation_blocker). A
    state is named by the decisions that led to it from the state the settle (re)started from (state 0)."""

    __slots__ = ("start", "states", "steps", "every")

    def __init__(self, start: int, every: bool):
        self.start = start  # log length where the settle (re)started
        self.states: dict[int, Answers] = {}
        self.steps: dict[tuple, int] = {}  # (state, decision) -> the state it leads to
        self.every = every  # every state recorded, or only state 0 (a first try)


class Answers:
    """What was answered in one state of a settle."""

    __slots__ = ("blockers", "plans", "admissions")

    def __init__(self):
        self.blockers: dict[tuple, tuple] = {}  # (workload, type, nodes, deferred heads) -> (blocker, trial plan)
        self.plans: dict[object, Plan] = {}  # scope -> its current plan
        # workload -> (its admission plan or None, the protected set then, the victim candidates it chose among)
        self.admissions: dict[Job, tuple] = {}


class TeamState:
    """A team's book (limits, usage) plus what the scheduler needs: queue, running work, policies."""

    def __init__(self, book: TeamBook, ranking: bool, flavors: int, resources: int):
        team = book.team
        self.book = book
        self.idx = book.idx
        self.name = book.name
        self.queue = TeamQueue(ranking)
        self.running: list[dict[Job, None]] = [{} for _ in range(flavors)]
        self.pending_demand = [[0.0] * resources for _ in range(flavors)]
        self.quota_order: list[int] = []
        self.within = team.within_team or team.preempt_team_tasks
        self.reclaim = team.reclaim_within_cohort
        self.borrow_within = team.borrow_within_cohort
        self.version = 0
        self.usage_gen = 0  # counts its starts and stops (what its dominant share is cached against)
        self.share: tuple[int, float] = (-1, 0.0)  # (usage_gen, dominant share) once asked
        self.below_share: tuple | None = None  # (usage_gen, fair share row, below it somewhere) once asked
        self.spare: dict[int, tuple[int, list[Job]]] = {}  # flavor -> (its team_gen, work it can give up there)
        self.hopes_reclaim = False
        self.wants: set[int] = set()  # once blocked: the instance types its candidates could run on
        # once blocked: the protection epoch (Scheduler.protect_epoch) if work was protected from eviction (or
        # deferred) then, else None
        self.shielded: int | None = None
        self.group = book.cohort.name if book.cohort is not None else ("alone", book.idx)

    @property
    def home(self) -> int | None:
        return self.quota_order[0] if self.quota_order else None


class Scheduler:
    prune_refused_shapes = True  # see _offer; the tests compare decisions with it off
    remember_refusals = True  # see reservation_blocker; the tests compare decisions with it off
    narrow_wakes = True  # see _stop; the tests compare decisions with it off
    narrow_retries = True  # see settle; the tests compare decisions with it off
    favor_evictors = True  # see settle; the tests check the same properties with it off
    memo_retries = True  # see reservation_blocker; the tests compare decisions with it off
    lazy_trials = True  # see _offer; the tests check the same properties with it off
    lazy_offers = True  # see _offer; the tests check the same properties with it off
    memo_victim_plans = True  # see plan; the tests compare decisions with it off

    def __init__(self, instance_types: list[InstanceType], teams: list[Team], policy: Policy, resources: list[str]):
        self.flavor_names = [it.name for it in instance_types]
        self.resources = resources
        ridx = {r: i for i, r in enumerate(resources)}
        capacity_total, self.pools = [], []
        for it in instance_types:
            per_node = [float(it.capacity.get(r, 0.0)) for r in resources]
            if it.count is None:
                capacity_total.append([INF] * len(resources))
                self.pools.append(None)
            else:
                capacity_total.append([amount * it.count for amount in per_node])
                self.pools.append(NodePool(per_node, it.count, resources) if it.count else None)
        self.book = QuotaBook(self.flavor_names, resources, teams, capacity_total)
        self.ridx = ridx
        self.fidx = self.book.fidx
        ranking = policy.task_prioritization == "task-ranking"
        self.fair = policy.idle_compute == "fair-share"
        self.backfill = policy.backfill == "reserve"
        self.teams = [TeamState(b, ranking, len(self.flavor_names), len(resources)) for b in self.book.teams]
        for state, team in zip(self.teams, teams, strict=True):
            state.quota_order = [self.fidx[name] for name in team.quota]
        self.by_name = {t.name: t for t in self.teams}
        self.shared_flavor = [
            pool is not None or any(cap != INF for cap in capacity_total[f]) or any(self.book.uncovered[f])
            for f, pool in enumerate(self.pools)
        ]
        self.jobs: dict[str, Job] = {}
        self.dirty: set[int] = set()
        # The live scheduler bounds a settle (time.monotonic() instant, or None: settle until nothing changes, as
        # the specification says). A settle past it stops offering; what it decided stands, the teams not yet
        # offered stay dirty for the next settle, and `cut` says so (the caller observes, then settles again).
        self.deadline: float | None = None
        self.cut = False
        self.blocked: dict[object, set[int]] = {}
        self.log: list[tuple] = []
        self.changes = 0
        self.demand_version: dict[object, int] = {}
        self._fair_cache: dict[object, tuple] = {}  # group -> (demand version, shares, demand)
        self._demand_touched: dict[object, set[int]] = {}  # group -> teams whose demand changed since then
        self.now = 0.0
        self.running_version: dict[tuple, int] = {}  # (flavor, group or None where shared) -> changes
        self.running_changes: dict[tuple, list | None] = {}  # the same key -> work started or stopped since read
        self.planner = Planner(self)
        # Plans are kept per scope: a cohort where no flavor is shared across cohorts (no nodes, no capacity
        # limit, nothing uncovered) plans alone; otherwise the whole cluster is one scope.
        self.any_shared = any(self.shared_flavor)
        # A scope's plan stays valid while its state changes only as planned (see current_plan): the state
        # version counts changes a plan cannot foresee, the queue version every change of a queue.
        self.state_version: dict[object, int] = {}
        self.queue_version: dict[object, int] = {}
        # Each scope's heads in planning order, kept as queues change: (planning key, team index, head).
        self._sorted_heads: dict[object, list[tuple]] = {}
        self._head_entry: dict[int, tuple] = {}
        self._plan_cache: dict[object, list] = {}  # scope -> [state version, queue version, plan]
        self._trials: dict[Job, tuple[tuple, Plan]] = {}  # trial plans that let a workload in, by state
        self.held_back: dict[int, list] = {}  # team -> [(head whose reservation held it back, its start)]
        self.protected: set[Job] = set()  # not to be evicted in this settle (their eviction would be wasted)
        # Victim searches that failed, kept while nothing they read has changed (see preemption.find_victims):
        # starts and stops per instance type, and per group (a fair-share search reads its cohort's usage on
        # every type). The cache is emptied whenever the protected set changes.
        self.flavor_gen = [0] * len(self.flavor_names)
        self.team_gen: dict[tuple[int, int], int] = {}  # (team, flavor): its own starts and stops there
        self.group_gen: dict[object, int] = {}
        self.no_victims: dict[tuple, tuple] = {}
        self.borrowers: dict[tuple, tuple] = {}  # (cohort, flavor, resources) -> (flavor_gen, members borrowing)
        self.ranked: dict[tuple, tuple] = {}  # the same key -> ((flavor_gen, group_gen), [(share, member)] by share)
        self.ranked_spare: dict[tuple, tuple] = {}  # the same key -> (the same gens, [(share, member, spare work)])
        self.searches = [0, 0]  # victim searches run, and skipped as known to fail
        self.victim_candidates: frozenset | None = None  # whom the latest victim search that succeeded chose among
        self.deferred: set[Job] = set()  # not to be admitted in this settle (the same settle would evict them)
        self.favored: set[Job] = set()  # offered before everyone in this settle (they evicted deferred work)
        self.protect_epoch = 0  # counts changes of (protected, deferred)
        # Trial plans that refused a workload, kept while what they read is unchanged (see reservation_blocker):
        # (workload, instance type, nodes) -> (what the trial read, the head it would delay)
        self.refusals: dict[tuple, tuple] = {}
        self.retry_memo: RetryMemo | None = None  # None outside a settle
        self.state_id = 0

    # ----- workloads coming and going -------------------------------------------------------------------

    def make_job(self, name, seq, team, requests, pods, priority, submit, want, duration=None) -> Job:
        per_pod = [0.0] * len(self.resources)
        for resource, amount in requests.items():
            per_pod[self.ridx[resource]] = float(amount)
        want_idx = self.fidx[want] if want is not None else None
        job = Job(name, seq, self.by_name[team], per_pod, pods, priority, submit, want_idx, duration)
        self.jobs[name] = job
        return job

    def submit(self, job: Job) -> None:
        team = job.team
        job.state = PENDING
        team.queue.push(job)
        self._queue_changed(team)
        self._demand(job, team.pending_demand, 1)
        self.dirty.add(team.idx)

    def start_running(self, job: Job, flavor: int, nodes: list[int] | None, since: float) -> None:
        """Record a workload admitted before the engine took over (nodes None = place it now)."""
        pool = self.pools[flavor]
        if pool is None:
            nodes = None  # no nodes to account: a quota-only type, or the cluster has none of it any more
        elif nodes is None:
            nodes = pool.place(job.per_pod, job.nz, job.pods)
            if nodes is None:
                raise ValueError(f"{job.name} does not fit on the free {self.flavor_names[flavor]} nodes")
        elif len(nodes) != job.pods or not all(isinstance(n, int) and 0 <= n < len(pool.free) for n in nodes):
            raise ValueError(f"{job.name} is placed on nodes the cluster's {self.flavor_names[flavor]} lacks")
        self._start(job, flavor, nodes)
        job.admitted_at = job.first_admitted_at = since

    def start_running_unplaced(self, job: Job, flavor: int, since: float) -> None:
        """Record admitted work whose pods the engine cannot place (a live cluster out of step)."""
        self._start(job, flavor, None)
        job.admitted_at = job.first_admitted_at = since

    def finish(self, job: Job, now: float) -> None:
        # Work that ends when it was expected to end, or later, changes nothing a plan did not foresee: the
        # plan supposed it gone from its expected end (or from when it was made), and no hold starts before
        # now in a plan still kept (see current_plan). Work that ends early frees room a plan did not count.
        self._stop(job, as_planned=job.duration is not None and now >= job.admitted_at + job.duration - EPS)
        job.state = FINISHED
        job.finished_at = now

    def _demand(self, job: Job, grid, sign: int) -> None:
        flavor = job.want if job.want is not None else job.team.home
        if flavor is not None:
            row = grid[flavor]
            for r in job.nz:
                row[r] += sign * job.total[r]
        self._demand_changed(job.team)

    def _demand_changed(self, team: TeamState) -> None:
        self.demand_version[team.group] = self.demand_version.get(team.group, 0) + 1
        self._demand_touched.setdefault(team.group, set()).add(team.idx)

    def _start(self, job: Job, flavor: int, nodes) -> None:
        team = job.team
        self.book.apply(team.book, flavor, job.total, job.nz, 1)
        if nodes is not None:
            self.pools[flavor].take(nodes, job.per_pod, job.nz)
        team.running[flavor][job] = None
        self._running_changed(team, flavor, job)
        self._state_changed(team)
        self._searched_stale(team, flavor)
        job.state, job.flavor, job.nodes = RUNNING, flavor, nodes
        job.admitted_at = self.now
        if job.first_admitted_at is None:
            job.first_admitted_at = self.now
        job.run += 1
        self.changes += 1
        self._demand_changed(team)
        if team.book.cohort is not None and team.book.borrowing(flavor, job.nz):
            self._wake(team.group, hopeful_only=True, started=(flavor, team) if self.narrow_wakes else None)

    def _stop(self, job: Job, as_planned: bool = False) -> None:
        team, flavor = job.team, job.flavor
        self.book.apply(team.book, flavor, job.total, job.nz, -1)
        if job.nodes is not None:
            self.pools[flavor].release(job.nodes, job.per_pod, job.nz)
        del team.running[flavor][job]
        self._running_changed(team, flavor, job)
        self._searched_stale(team, flavor)
        if not as_planned:
            self._state_changed(team)
        self.changes += 1
        self._demand_changed(team)
        released = (flavor, team.idx) if self.narrow_wakes else None
        for group in list(self.blocked) if self.shared_flavor[flavor] else [team.group]:
            self._wake(group, released=released)

    def _searched_stale(self, team: TeamState, flavor: int) -> None:
        """Work started or stopped on `flavor`: victim searches there may now find room or victims."""
        self.flavor_gen[flavor] += 1
        team.usage_gen += 1
        self.team_gen[team.idx, flavor] = self.team_gen.get((team.idx, flavor), 0) + 1
        self.group_gen[team.group] = self.group_gen.get(team.group, 0) + 1

    def _protect(self, protected: set[Job], deferred: set[Job]) -> None:
        changed = protected != self.protected
        if changed:
            self.no_victims.clear()  # a failed search may succeed with fewer protected, or fail with more
        if changed or deferred != self.deferred:
            self.protect_epoch += 1
        self.protected, self.deferred = protected, deferred

    def _evict(self, victim: Job, by: Job, reason: str) -> None:
        flavor, nodes, admitted_at, run = victim.flavor, victim.nodes, victim.admitted_at, victim.run
        self._stop(victim)
        victim.flavor = victim.nodes = None
        victim.preemptions += 1
        victim.admitted_at = None
        self.log.append(("preempted", victim, by, reason, (flavor, nodes, admitted_at, run)))
        self.submit(victim)
        self._decided((0, victim, by, reason))

    def _wake(
        self, group, hopeful_only: bool = False, released: tuple | None = None, started: tuple | None = None
    ) -> None:
        blocked = self.blocked.get(group)
        if not blocked:
            return
        if released is not None:
            # Room released on one instance type (work stopped there) can unblock only: a team with a candidate
            # that could run there; the team whose work stopped (its share fell, so more of others' borrowed
            # work may be its fair-share victim anywhere); a team a reservation held back (time has passed or
            # plans changed since: its trial is asked again, and remembered where nothing it read changed); and
            # a team blocked while work was protected from eviction in a settle (that protection is gone).
            # Everything else a blocked team's candidates read is per instance type (quota, nodes, running work,
            # fair shares) or can only narrow its claims (the stopping team's share fell), and is unchanged.
            flavor, stopper = released
            woken = {
                i
                for i in blocked
                if i == stopper or flavor in self.teams[i].wants or i in self.held_back or self._unshielded(i)
            }
            self.dirty |= woken
            blocked -= woken
            return
        if hopeful_only:
            if started is not None:
                # a team a reservation held back is judged as before (its trial may have changed with the plan)
                hopeful = {
                    i
                    for i in blocked
                    if self._may_take_from_borrowers(self.teams[i])
                    and (i in self.held_back or self._unshielded(i) or self._may_take_from(self.teams[i], *started))
                }
            else:
                hopeful = {i for i in blocked if self._may_take_from_borrowers(self.teams[i])}
            self.dirty |= hopeful
            blocked -= hopeful
        else:
            self.dirty |= blocked
            blocked.clear()

    def _unshielded(self, idx: int) -> bool:
        """Whether the team was blocked while work was protected (or deferred) under a protection that has
        changed since: it may now take what was kept from it. Under the same protection it is blocked like any
        other team (a settle that changes the protection offers every team again)."""
        epoch = self.teams[idx].shielded
        return epoch is not None and epoch != self.protect_epoch

    def _may_take_from(self, team: TeamState, flavor: int, starter: TeamState) -> bool:
        """_may_take_from_borrowers, told where the new borrowed work runs and whose it is: it can be a victim only
        on its own instance type (a reclaim, or others' lower-priority borrowed work); and its team's share rose,
        which makes that team's borrowed work on any type where it borrows a possible fair-share victim there.
        So a blocked team is woken only where one of its candidates could run on such a type."""
        for job in team.queue.heads():
            for f in self.flavors_for(job):
                if f == flavor:
                    if self._fits_nominal(job, f):
                        return True  # it may reclaim there (as hopes_reclaim, on this type)
                    if self.fair and team.borrow_within == "LowerPriority":
                        return True
                if (
                    self.fair
                    and team.reclaim != "Never"
                    and starter.book.borrowing(f, job.nz)
                    and preemption._below_fair_share(self, job, f)
                ):
                    return True
        return False

    def _may_take_from_borrowers(self, team: TeamState) -> bool:
        """Whether new borrowed work in its cohort could be a victim for this blocked team: its head fits its
        nominal quota (reclaim), or, with idle compute by fair share, the team is below its fair share on some
        resource (fair-share victims) or evicts others' lower-priority borrowed work. Others wait for room:
        a start takes room and gives none."""
        if team.hopes_reclaim:
            return True
        if not self.fair:
            return False
        if team.borrow_within == "LowerPriority":
            return True
        # kept while the team's usage and the cohort's fair shares are the same (a blocked team is asked each
        # time borrowed work starts in its cohort: 49,000 times in one pass over a thousand teams)
        share, usage = self.fair_share(team), team.book.usage
        known = team.below_share
        if known is not None and known[0] == team.usage_gen and known[1] is share:
            return known[2]
        below = any(
            u < sh - EPS for row, srow in zip(usage, share, strict=True) for u, sh in zip(row, srow, strict=True)
        )
        team.below_share = (team.usage_gen, share, below)
        return below

    # ----- settling -------------------------------------------------------------------------------------

    def wake_all(self, but: set[int] = frozenset()) -> None:
        """Offer every team with pending work again, except the blocked teams of `but` (they stay blocked)."""
        self.dirty.update(t.idx for t in self.teams if t.queue.size and t.idx not in but)
        if but:
            for blocked in self.blocked.values():
                blocked &= but
        else:
            self.blocked.clear()

    def _calm(self) -> set[int]:
        """Blocked teams that no reservation held back and that were blocked under no protection."""
        return {
            i
            for blocked in self.blocked.values()
            for i in blocked
            if i not in self.held_back and self.teams[i].shielded is None
        }

    def settle(self, now: float) -> None:
        """Admit and preempt until nothing changes; what happened is appended to `self.log`.

        A workload evicted and then readmitted within the same settle would restart for nothing: the settle
        is then undone and run again with such workloads protected from eviction, so that the claimant takes
        what their readmission would have taken instead (or waits). Protection lasts only as long as it is
        needed: once a protected settle has made progress, a plain pass follows, since work that was
        protected may now be evicted for good (without that, settling again would still change things).
        """
        self.now = now
        first = start = len(self.log)
        # teams that had no candidate in the state the settle starts from, under no protection and held back by
        # no reservation: a retry from that state with work protected or deferred gives them no more (see below)
        calm = self._calm() if self.narrow_retries else set()
        protected: set[Job] = set()
        deferred: set[Job] = set()
        ever_protected: set[Job] = set()  # across the plain passes of this settle
        ever_deferred: set[Job] = set()
        plain_passes = 0
        retried = False  # whether this try starts again from where an earlier try of this settle started
        self.cut = False
        while True:  # a retry protects or defers more work, or spends one of the few plain passes: this ends
            mark = len(self.log)
            if mark == start:  # the state the settle (re)starts from: see reservation_blocker
                # A first try records only what it asks in the state it starts from (most of a try's cost, and
                # most settles never retry: recording every state cost 15 % of Kueue's large-scale scenario);
                # retries record every state they go through.
                memo = self.retry_memo
                if not self.memo_retries:
                    self.retry_memo = None
                elif not retried or memo is None or memo.start != mark:
                    self.retry_memo = RetryMemo(mark, retried)
                else:
                    memo.every = True
                self.state_id = 0
            self._settle_once(mark)
            if self.cut:
                break  # past the deadline: what was decided stands (a retry now could only undo it)
            readmitted, undone = self._waste(start)
            wasted = readmitted - self.protected
            undone -= self.deferred
            if not (wasted or undone) and start != first:
                # A plain pass may readmit work that the protected pass before it evicted (or evict work it
                # admitted): that earlier move was the waste. Start the settle over with it protected (deferred)
                # as well, as long as that protects or defers something new.
                readmitted, undone = self._waste(first)
                if readmitted - ever_protected or undone - ever_deferred:
                    start = first
                    wasted, undone = readmitted - ever_protected, undone - ever_deferred
                    protected, deferred = set(ever_protected), set(ever_deferred)
                else:
                    wasted, undone = set(), set()
            if wasted or undone:
                if self.favor_evictors:
                    self.favored |= self._evictors(start, undone)
                self._undo(start)
                retried = True
                protected |= wasted
                deferred |= undone
                ever_protected |= wasted
                ever_deferred |= undone
                self._protect(set(protected), set(deferred))
                if start == first:
                    # Back in the state the settle began from: protection only takes victims away and deferral
                    # only keeps work out (a deferred head's reservation is moot, but a team it held back is
                    # not calm), so a calm team still has no candidate.
                    self.wake_all(but=calm)
                else:
                    self.wake_all()
            elif (self.protected or self.deferred) and len(self.log) > mark and plain_passes < MAX_PLAIN_PASSES:
                # What the protected settle did stands; from here the settle starts afresh, unprotected, as
                # settling again would (undoing back past it would only find the same waste again).
                plain_passes += 1
                start = len(self.log)
                retried = False
                protected, deferred = set(), set()
                self._protect(set(), set())
                self.favored = set()
                self.wake_all()
            else:
                break
        self._protect(set(), set())
        self.favored = set()
        self.retry_memo = None

    def _waste(self, start: int) -> tuple[set[Job], set[Job]]:
        """What this settle did for nothing: workloads evicted and then admitted again (their eviction would be
        wasted: they are protected on the retry), and workloads admitted and then evicted (they would start
        only to be stopped: they are deferred on the retry, and their evictor takes the room directly)."""
        admitted, evicted, readmitted, undone = set(), set(), set(), set()
        for entry in self.log[start:]:
            job = entry[1]
            if entry[0] == "admitted":
                admitted.add(job)
                if job in evicted:
                    readmitted.add(job)
            else:
                evicted.add(job)
                if job in admitted:
                    undone.add(job)
        return readmitted, undone

    def _evictors(self, start: int, undone: set[Job]) -> set[Job]:
        """Who took the room of each undone workload (admitted, then evicted within the settle), followed to the
        last of a chain (an evictor evicted in turn is undone too): the one that kept it. On the retry it is
        offered before everyone, so that it takes that room directly. Deferring the undone workload alone is not
        enough where several teams' borrowers would take the same room first: each retry deferred one of them,
        and the next took the room and was evicted in turn (15 retries of a whole settle in a full cluster)."""
        taken_by: dict[Job, Job] = {}
        for entry in self.log[start:]:
            if entry[0] != "admitted" and entry[1] in undone:
                taken_by[entry[1]] = entry[2]
        out = set()
        for job in taken_by:
            seen = {job}
            while job in taken_by and taken_by[job] not in seen:
                job = taken_by[job]
                seen.add(job)
            if job.state == RUNNING and job not in undone:
                out.add(job)
        return out

    def _undo(self, start: int) -> None:
        """Take back what the log records since `start`, newest first, restoring the exact earlier state."""
        while len(self.log) > start:
            entry = self.log.pop()
            if entry[0] == "admitted":
                job, previous = entry[1], entry[4]
                self._stop(job)
                job.flavor = job.nodes = None
                job.admitted_at, job.first_admitted_at, job.run = previous
                self.submit(job)
            else:
                victim, (flavor, nodes, admitted_at, run) = entry[1], entry[4]
                victim.team.queue.remove(victim)
                self._queue_changed(victim.team)
                self._demand(victim, victim.team.pending_demand, -1)
                self._start(victim, flavor, nodes)
                victim.admitted_at, victim.run = admitted_at, run
                victim.preemptions -= 1

    def _settle_once(self, start: int) -> None:
        heap: list[tuple] = []
        budget = 50 * (len(self.jobs) + 10)
        while budget > 0:
            if self.dirty:
                dirty, self.dirty = self.dirty, set()
                for k, idx in enumerate(dirty):
                    if self._past_deadline(start) and k % 16 == 0:
                        self.dirty |= set(list(dirty)[k:])
                        break
                    self._offer(self.teams[idx], heap)
            if self._past_deadline(start):
                self.cut = True
                self.dirty.update(entry[2] for entry in heap)  # offered but not admitted: offered again next time
                return
            if not heap and not (self.held_back and self._release_held()):
                break
            if not heap:
                continue
            key, _, idx, version, changes, job, plan = heapq.heappop(heap)
            team = self.teams[idx]
            if version != team.version:
                continue
            if job is None:  # a team pushed before it was offered: its real candidate goes to the heap now
                self._offer(team, heap, at_turn=True)
                continue
            if changes != self.changes and not self._still_valid(job, plan):
                fresh = self._offer(team, None)
                if fresh is None:
                    continue
                if fresh[0] > key:
                    heapq.heappush(heap, fresh)
                    continue
                job, plan = fresh[5], fresh[6]
            budget -= 1 + len(plan[3])
            self._admit(job, plan)
            self.dirty.add(idx)

    def _past_deadline(self, start: int) -> bool:
        """Whether the settle should stop here: past the deadline, and once it has decided something (a pass
        cut before its first admission would leave the next pass the same work again, and no pass would ever
        admit anything)."""
        return self.deadline is not None and len(self.log) > start and time.monotonic() > self.deadline

    def _release_held(self) -> bool:
        """Offer again the teams whose holding reservation moved later or went (an admission that need not
        respect it may have moved it); others stay blocked until something is released. True if any."""
        released = False
        for idx, held in list(self.held_back.items()):
            for blocker, start in held:
                if blocker.state != PENDING or self.current_plan(self.scope(blocker.team)).start(blocker) > start + EPS:
                    del self.held_back[idx]
                    self.dirty.add(idx)
                    released = True
                    break
        return released

    def _still_valid(self, job: Job, plan) -> bool:
        """A plan without victims survives others' admissions if its quota and nodes are still free and it
        still delays no reservation."""
        flavor, nodes, borrows, victims = plan
        if victims:
            return False
        code, still_borrows = self.book.check(job.team.book, flavor, job.total, job.nz)
        if code != FITS or still_borrows != borrows:
            return False
        if nodes is not None and not self.pools[flavor].still_fits(nodes, job.per_pod, job.nz):
            return False
        return self.reservation_blocker(job, plan) is None

    def _offer(self, team: TeamState, heap, at_turn: bool = False) -> tuple | None:
        """Push the team's best candidate (or return it when heap is None); block the team if it has none."""
        team.version += 1
        blocked = self.blocked.get(team.group)
        if blocked:
            blocked.discard(team.idx)  # blocked means: its latest offer found nothing (a submit offers it again)
        if team.queue.size and heap is not None and self.lazy_offers and not at_turn:
            # The team is pushed at a key no candidate of its can come before, and offered when that comes up
            # (see _settle_once), in the state of that moment: a round offers every woken team, most are offered
            # again before their turn (woken again) or find nothing, and their victim searches and trial plans
            # are most of a pass. Up to its first decision a settle decides as if every team were offered at
            # once (the popped team's real candidate goes back to the heap unless it is the least there).
            heads = team.queue.heads()  # in queue order: the first holds the least key
            later = not (self.favored and any(job in self.favored for job in heads))
            key = (later, self._least_share(team, heads), heads[0].key)
            entry = (key, heads[0].seq, team.idx, team.version, UNOFFERED, None, None)
            heapq.heappush(heap, entry)
            return entry
        if team.queue.size:
            held = []
            # Buckets differ by duration alone (backfill treats them apart), and nothing changes while the
            # team's candidates are tried: a shape's plan (it does not depend on the duration, nor, unless
            # newer equal-priority work may be evicted, on the submit time) is made once. A shape refused
            # because it would delay the first head in planning order refuses every later candidate of that
            # shape that runs at least as long: it takes the same room for longer, and that head's start
            # depends on nothing else (a head further down can also move *earlier* when a head before it is
            # pushed past its run, so only the first gives this rule).
            newer = team.within == "LowerOrNewerEqualPriority"
            plans: dict[tuple, tuple | None] = {}
            refused: dict[tuple, tuple] = {}  # shape -> (duration, planning key) of a candidate refused so
            for job in team.queue.heads():
                if job in self.deferred:
                    continue
                shape = job.sig[:4]
                key = (shape, job.submit) if newer else shape
                if key not in plans:
                    plans[key] = self.plan(job)
                plan = plans[key]
                if plan is not None and not plan[3] and heap is not None and self.lazy_trials and self.backfill:
                    # Whether it delays a reservation is asked when its turn comes (see _settle_once), in the
                    # state of that moment: most candidates of a round are never popped (their team is offered
                    # again first, or the settle ends), and a trial plan is the dearest part of an offer.
                    entry = (self._key(team, job, plan), job.seq, team.idx, team.version, UNCHECKED, job, plan)
                    heapq.heappush(heap, entry)
                    return entry
                if plan is not None and not plan[3]:
                    length = INF if job.duration is None else job.duration
                    first = refused.get(shape)
                    if (
                        first is not None
                        and length >= first[0]
                        and planning_key(job) > first[1]
                        and self.prune_refused_shapes
                    ):
                        continue
                    blocker = self.reservation_blocker(job, plan)
                    elsewhere = self._elsewhere(job, plan) if blocker is not None else None
                    if elsewhere is not None:
                        plan = elsewhere  # another of its instance types delays nobody
                    elif blocker is not None:
                        blocking_plan = self.current_plan(self.scope(blocker.team))
                        held.append((blocker, blocking_plan.start(blocker)))
                        single = len(self.flavors_for(job)) == 1  # refused elsewhere perhaps by a later head
                        if single and first is None and blocking_plan.heads and blocking_plan.heads[0] is blocker:
                            refused[shape] = (length, planning_key(job))
                        continue
                if plan is not None:
                    entry = (self._key(team, job, plan), job.seq, team.idx, team.version, self.changes, job, plan)
                    if heap is not None:
                        heapq.heappush(heap, entry)
                    return entry
            team.hopes_reclaim = any(self._within_nominal(job) for job in team.queue.heads())
            team.wants = {f for job in team.queue.heads() for f in self.flavors_for(job)}
            team.shielded = self.protect_epoch if self.protected or self.deferred else None
            self.blocked.setdefault(team.group, set()).add(team.idx)
            if held:  # reservations held it back: offered again if one of them moves (see _release_held)
                self.held_back[team.idx] = held
        return None

    # ----- reservations ---------------------------------------------------------------------------------

    def ends_key(self, flavor: int, group) -> tuple:
        """Whose running work's ends a plan on `flavor` counts: everyone's where the flavor is shared across
        cohorts, else only the group's own (the key of running_version and running_changes)."""
        return (flavor, None if self.shared_flavor[flavor] else group)

    def _running_changed(self, team: TeamState, flavor: int, job: Job) -> None:
        key = self.ends_key(flavor, team.group)
        self.running_version[key] = self.running_version.get(key, 0) + 1
        changes = self.running_changes.setdefault(key, [])
        if changes is not None:  # None: too many to follow, the planner lists the ends afresh when it reads them
            changes.append(job)
            if len(changes) > MAX_RUNNING_CHANGES:
                self.running_changes[key] = None

    def scope(self, team: TeamState):
        return None if self.any_shared else team.group

    def _queue_changed(self, team: TeamState) -> None:
        scope = self.scope(team)
        self.queue_version[scope] = self.queue_version.get(scope, 0) + 1
        old = self._head_entry.get(team.idx)
        head = team.queue.first() if team.queue.size else None
        if old is not None and old[2] is head:
            return
        ordered = self._sorted_heads.setdefault(scope, [])
        if old is not None:
            del ordered[bisect_left(ordered, old)]
            del self._head_entry[team.idx]
        if head is not None:
            entry = (planning_key(head), team.idx, head)  # the key is unique: heads never compare themselves
            insort(ordered, entry)
            self._head_entry[team.idx] = entry

    def _state_changed(self, team: TeamState) -> None:
        scope = self.scope(team)
        self.state_version[scope] = self.state_version.get(scope, 0) + 1

    def _token(self, scope) -> tuple:
        """Changes nothing but itself: a trial plan made under one token holds while the token is the same."""
        return (self.state_version.get(scope, 0), self.queue_version.get(scope, 0), self.now)

    def heads(self, scope=...) -> list[Job]:
        """Every team's head (first pending workload in its queue order) in planning order; with `scope`,
        only the heads of that scope's teams, at most MAX_PLANNED_HEADS of them."""
        if scope is ...:
            return sorted((t.queue.first() for t in self.teams if t.queue.size), key=planning_key)
        return [entry[2] for entry in self._sorted_heads.get(scope, ())[:MAX_PLANNED_HEADS]]

    def _crossed(self, plan: Plan, f: int, end: float) -> list:
        """The holds on flavor `f` that start before `end`: those a workload running until `end` could move."""
        return [h for h in plan.holds.values() if h is not None and h.f == f and h.start < end - EPS]

    def current_plan(self, scope=...) -> Plan:
        """The plan of a scope's heads (every scope's where none is given).

        A plan is kept while the scope's state changes only as it foresaw: work ends when expected, the
        admissions it was checked against are made (see _admit), and time passes without leaving a hold
        behind. Work running past its expected end changes nothing then: the plan supposed it ends at once,
        and each hold still starts at or after now, by when it would have ended in a fresh plan too. When
        only the heads change, the heads before the first change keep their holds and the rest are planned
        again.
        """
        if scope is ...:
            heads, holds = [], {}
            for each in {self.scope(t) for t in self.teams if t.queue.size}:
                plan = self.current_plan(each)
                heads += plan.heads
                holds.update(plan.holds)
            return Plan(sorted(heads, key=planning_key), holds)
        cached = self._valid_entry(scope)
        queue_version = self.queue_version.get(scope, 0)
        if cached is not None and cached[1] == queue_version:
            return cached[2]
        memo = self._memo()
        if memo is not None and scope in memo.plans:
            plan = memo.plans[scope]
            self._remember(scope, plan)
            return plan
        heads = self.heads(scope)
        if cached is None:
            plan = self.planner.plan(heads)
        else:
            old = cached[2].heads
            keep = next((k for k, (a, b) in enumerate(zip(old, heads, strict=False)) if a is not b), None)
            if keep is None and len(old) == len(heads):
                plan = cached[2]
            else:
                plan = self.planner.plan(heads, None, cached[2], min(len(old), len(heads)) if keep is None else keep)
        self._remember(scope, plan)
        if memo is not None:
            memo.plans[scope] = plan
        return plan

    def _memo(self) -> Answers | None:
        """What was answered in this state of the settle on an earlier try (None where it is not recorded)."""
        memo = self.retry_memo
        if memo is None or (self.state_id and not memo.every):
            return None
        known = memo.states.get(self.state_id)
        if known is None:
            known = memo.states[self.state_id] = Answers()
        return known

    def _decided(self, decision: tuple) -> None:
        """Name the state a decision leads to (see reservation_blocker)."""
        memo = self.retry_memo
        if memo is None:
            return
        if not memo.every:
            self.state_id = -1  # past the state the try started from: a first try records no more
            return
        step = memo.steps
        self.state_id = step.setdefault((self.state_id, decision), len(step) + 1)

    def _valid_entry(self, scope) -> list | None:
        """The cached plan entry of `scope` if the state has changed only as it foresaw (its heads may differ)."""
        cached = self._plan_cache.get(scope)
        if cached is None or cached[0] != self.state_version.get(scope, 0):
            return None
        if cached[3] < self.now - EPS:
            return None
        return cached

    def _remember(self, scope, plan: Plan) -> None:
        first = min((h.start for h in plan.holds.values() if h is not None), default=INF)
        self._plan_cache[scope] = [self.state_version.get(scope, 0), self.queue_version.get(scope, 0), plan, first]

    def reservation_blocker(self, job: Job, plan) -> Job | None:
        """_trial_blocker, remembered for the settle's retries. A retry undoes everything back to the state the
        settle started from, exactly, and offers every team again there, with more work protected from eviction
        or deferred; it then goes through the same states as the try before as long as it makes the same
        decisions (a state is named by the decisions that led to it). What a reservation answers reads no
        victims, so no protection; of the deferred work, only the planned heads among it (not respected). In a
        full cluster each retry asked the same hundred trial plans again (0.5-0.8 s of a 0.7-0.9 s retry), in a
        cascade of reclaims one retry per victim readmitted elsewhere."""
        memo = self._memo()
        if memo is None:
            return self._trial_blocker(job, plan)
        deferred = self.deferred
        if deferred:
            planned = self._sorted_heads.get(self.scope(job.team), ())[:MAX_PLANNED_HEADS]
            deferred = frozenset(entry[2] for entry in planned if entry[2] in deferred)
        key = (job, plan[0], tuple(plan[1]) if plan[1] else None, deferred or None)
        known = memo.blockers.get(key)
        if known is not None:
            blocker, trial = known
            if trial is not None:
                self._trials[job] = (self._token(self.scope(job.team)), trial)
            return blocker
        self._trials.pop(job, None)
        blocker = self._trial_blocker(job, plan)
        trial = self._trials.get(job) if blocker is None else None
        memo.blockers[key] = (blocker, None if trial is None else trial[1])
        return blocker

    def _trial_blocker(self, job: Job, plan) -> Job | None:
        """The head whose planned start admitting `job` now (per `plan`, without victims) would delay, if any.

        Respected are the heads before `job` in planning order and its own team's head, except `job` itself
        and other teams' heads where the team stays within its nominal quota on every resource of the
        chosen instance type (quota is a guarantee). Only planned heads (the scope's first
        MAX_PLANNED_HEADS) hold reservations, so only they can be delayed.
        """
        if not self.backfill:
            return None
        f, nodes = plan[0], plan[1]
        team = job.team
        own_head = team.queue.first()
        book = team.book
        usage, nominal = book.usage[f], book.nominal[f]
        within = all(usage[r] + job.total[r] <= nominal[r] + EPS for r in range(len(usage)))
        key = planning_key(job)
        scope = self.scope(team)
        rivals = [
            head
            for _, _, head in self._sorted_heads.get(scope, ())[:MAX_PLANNED_HEADS]
            if head is not job
            and head not in self.deferred  # the same settle would evict it: its reservation is moot
            and (head is own_head or (not within and planning_key(head) < key))
        ]
        if not rivals:
            self._keep_plan_if_untouched(job, f, scope)
            return None
        base = self.current_plan(scope)
        end = end_of(job, self.now)
        crossed = self._crossed(base, f, end)
        if not crossed:
            self._trials[job] = (self._token(scope), base)
            return None
        # Without nodes a plan depends on the quota book alone, so holds that still fit stay the plan; with
        # nodes a fresh plan may place heads differently, so only a trial plan can tell.
        quota_only = self.pools[f] is None
        if quota_only and all(h.start <= self.now for h in crossed) and self._fits_beside_holds(job, f, nodes, base):
            self._trials[job] = (self._token(scope), base)
            return None
        remembered = None
        if self.remember_refusals and job not in base.holds:
            remembered = (job.seq, f, tuple(nodes) if nodes else None)
            read = self._refusal_reads(base, f, rivals)
            known = self.refusals.get(remembered)
            if known is not None and known[0] == read and known[1] in rivals:
                return known[1]  # (a blocker is always a rival; the check keeps a stale one from holding forever)
        heads = [h for h in base.heads if h is not job]
        # Heads before the first whose hold W crosses keep their holds; the trial stops at the first rival it
        # delays, else it plans every head and is kept as the plan once W is admitted.
        crossed_set = {id(h) for h in crossed}
        keep = next((k for k, h in enumerate(heads) if id(base.holds.get(h)) in crossed_set), len(heads))
        rival_set = set(rivals)
        trial = self.planner.plan(heads, Extra(job, f, nodes, end), base, keep, rival_set)
        late = [h for h in rivals if trial.start(h) > base.start(h) + EPS]
        if late:
            blocker = min(late, key=planning_key)
            if remembered is not None:
                if len(self.refusals) >= MAX_REMEMBERED_REFUSALS:
                    self.refusals.clear()
                self.refusals[remembered] = (read, blocker)
            return blocker
        self._trials[job] = (self._token(scope), trial)
        return None

    def _refusal_reads(self, base: Plan, f: int, rivals: list[Job]) -> tuple:
        """What a trial of a workload (not itself a head) on `f` reads, beyond the workload: the instance types
        its outcome can depend on, their state and the holds on them, and the rivals held there.

        The trial only takes room on `f`. While the plan is monotone a head held elsewhere keeps its hold
        without a search; once a head on `f` moves, later heads are planned again, and a head that can use
        only types the trial does not touch gets the hold it has in the plan (its type's state and the holds
        before it there are the plan's). So the trial reads `f`, and, through the heads that may run on
        several types, every type such a head links to `f` (transitively). On each: the starts and stops
        there (flavor_gen: usage, nodes, running work and its ends), and the holds; and the time. Rivals held
        on other types cannot be delayed by it. A refusal is kept while all of that is the same: in a
        cascade of reclaims on one type, workloads refused on the others are not tried again."""
        types = {f}
        grown = True
        while grown:
            grown = False
            for head in base.heads:
                wants = self.flavors_for(head)
                if len(wants) > 1 and types.intersection(wants) and not types.issuperset(wants):
                    types.update(wants)
                    grown = True
        holds = []
        for head in base.heads:
            hold = base.holds.get(head)
            if hold is not None and hold.f in types:
                holds.append((head.seq, hold.f, hold.start, hold.end, tuple(hold.nodes) if hold.nodes else None))
        held = tuple(r.seq for r in rivals if (hold := base.holds.get(r)) is not None and hold.f in types)
        ordered = sorted(types)
        return (self.now, tuple(ordered), tuple(self.flavor_gen[t] for t in ordered), tuple(holds), held)

    def _least_share(self, team: TeamState, heads: list[Job]):
        """The least share a candidate of the team's can have in its key (see _key): its dominant share with the
        candidate admitted, at least the share it has now (adding work never lowers a share), on any instance type
        the candidate may run on. Without fair share, the key's second part is whether it borrows: False."""
        if not self.fair:
            return False
        least = INF
        for job in heads:
            if job in self.deferred:
                continue
            for f in self.flavors_for(job):
                share = dominant_share(self.book, team.book, f, job.total)
                if share < least:
                    least = share
        return least if least != INF else self.dominant_share(team)

    def _key(self, team: TeamState, job: Job, plan) -> tuple:
        later = job not in self.favored  # the favored first
        if self.fair:
            return (later, dominant_share(self.book, team.book, plan[0], job.total), job.key)
        return (later, plan[2], job.key)

    def _within_nominal(self, job: Job) -> bool:
        return any(self._fits_nominal(job, f) for f in self.flavors_for(job))

    def _fits_nominal(self, job: Job, f: int) -> bool:
        book = job.team.book
        return all(book.usage[f][r] + job.total[r] <= book.nominal[f][r] + EPS for r in job.nz)

    def flavors_for(self, job: Job) -> list[int]:
        return [job.want] if job.want is not None else job.team.quota_order

    def plan(self, job: Job, skip: set[int] | None = None):
        """How `job` could be admitted now: (flavor, nodes, borrows, victims), or None.

        Instance types are tried in the team's quota order, preferring one that fits without borrowing,
        then with borrowing, then with preemption. With `skip`, those types are passed over and nobody is
        preempted (see _elsewhere).
        """
        memo = self._memo() if skip is None else None
        if memo is not None:
            known = memo.admissions.get(job)
            if known is not None:
                found, then, read = known
                # A plan without victims reads no protection; where there was none, more protection finds none
                # either; a plan with victims was chosen among candidates of which none is protected since.
                if found is not None and not found[3]:
                    return found
                if then <= self.protected and (found is None or read.isdisjoint(self.protected - then)):
                    return found
            self.victim_candidates = None
            found = self._plan(job, None)
            read = None
            if found is not None and found[3]:
                read = self.victim_candidates
                if read is None or not self.memo_victim_plans:
                    return found
            memo.admissions[job] = (found, frozenset(self.protected) if self.protected else NONE_PROTECTED, read)
            return found
        return self._plan(job, skip)

    def _plan(self, job: Job, skip: set[int] | None):
        book, team = self.book, job.team.book
        borrowing_plan = None
        flavors = self.flavors_for(job)
        for f in flavors:
            if skip and f in skip:
                continue
            code, borrows = book.check(team, f, job.total, job.nz)
            if code != FITS:
                continue
            nodes = None
            pool = self.pools[f]
            if pool is not None:
                nodes = pool.place(job.per_pod, job.nz, job.pods)
                if nodes is None:
                    continue
            if not borrows:
                return (f, nodes, False, ())
            if borrowing_plan is None:
                borrowing_plan = (f, nodes, True, ())
        if borrowing_plan is not None or skip:
            return borrowing_plan
        for f in flavors:
            found = preemption.find_victims(self, job, f)
            if found is not None:
                victims, nodes = found
                removed = preemption.removal(victims, f)
                _, borrows = book.check(team, f, job.total, job.nz, removed)
                return (f, nodes, borrows, victims)
        return None

    def _elsewhere(self, job: Job, refused) -> tuple | None:
        """A workload that may run on several instance types, refused by a reservation on the one it prefers:
        the next that fits now, in the same order of preference, where it delays nobody it must respect (never
        with victims: it would rather wait its turn than evict to avoid it)."""
        if len(self.flavors_for(job)) < 2:
            return None
        skip = {refused[0]}
        while True:
            plan = self.plan(job, skip)
            if plan is None:
                return None
            if self.reservation_blocker(job, plan) is None:
                return plan
            skip.add(plan[0])

    def _keep_plan_if_untouched(self, job: Job, f: int, scope) -> None:
        """A workload admitted with nobody to respect may still move heads; where a valid plan is at hand and
        no hold on `f` starts before it ends, that plan stays valid after its admission."""
        cached = self._valid_entry(scope)
        if cached is None or cached[1] != self.queue_version.get(scope, 0):
            return
        if not self._crossed(cached[2], f, end_of(job, self.now)):
            self._trials[job] = (self._token(scope), cached[2])

    def _fits_beside_holds(self, job: Job, f: int, nodes, base: Plan) -> bool:
        """With `job` admitted now, does every hold that starts now on `f` still fit, in planning order? Then,
        where no later hold starts before `job` ends, no planned start moves."""
        timeline = Timeline(self, f)
        try:
            timeline.put(job, f, nodes, 1)
            for head in base.heads:
                hold = base.holds.get(head)
                if hold is None or hold.f != f or hold.start > self.now or head is job:
                    continue
                if self.book.check(head.team.book, f, head.total, head.nz)[0] != FITS:
                    return False
                pool = self.pools[f]
                if pool is not None and hold.nodes and not pool.still_fits(hold.nodes, head.per_pod, head.nz):
                    return False
                timeline.put(head, f, hold.nodes, 1)
            return True
        finally:
            timeline.close()

    def _admit(self, job: Job, plan) -> None:
        flavor, nodes, borrows, victims = plan
        scope = self.scope(job.team)
        trial = self._trials.pop(job, None)
        if trial is not None and (victims or trial[0] != self._token(scope)):
            trial = None
        self._trials.clear()
        for victim, reason in victims:
            self._evict(victim, job, reason)
        team = job.team
        was_head = team.queue.first() is job
        previous = (job.admitted_at, job.first_admitted_at, job.run)
        team.queue.pop(job)
        self._queue_changed(team)
        self._demand(job, team.pending_demand, -1)
        self._start(job, flavor, nodes)
        self.log.append(("admitted", job, flavor, borrows, previous))
        self._decided((1, job, flavor, tuple(nodes) if nodes else None))
        if trial is not None:
            plan = trial[1]
            if was_head:
                plan = self._with_new_head(plan, job)
            if plan is not None:
                self._remember(scope, plan)

    def _with_new_head(self, plan: Plan, job: Job) -> Plan | None:
        """The plan once a head admitted as planned (now, on the nodes it held) leaves it: the scope's heads
        as they now stand, the common prefix with the old plan keeping its holds and the rest planned again.
        None where the admission differs from the hold (then the plan is made afresh)."""
        if job in plan.holds:
            hold = plan.holds[job]
            if hold is None or hold.start > self.now or hold.f != job.flavor:
                return None
            if self.pools[job.flavor] is not None and hold.nodes != job.nodes:
                return None
        # else a trial plan made with the job as admitted now, exactly as it was: the other heads hold already
        old = [h for h in plan.heads if h is not job]
        heads = self.heads(self.scope(job.team))
        keep = next(
            (k for k, (a, b) in enumerate(zip(old, heads, strict=False)) if a is not b), min(len(old), len(heads))
        )
        return self.planner.plan(heads, None, plan, keep)

    # ----- fair share -----------------------------------------------------------------------------------

    def dominant_share(self, team: TeamState) -> float:
        """The team's dominant share now (fairshare.dominant_share), kept until its usage next changes."""
        gen, share = team.share
        if gen != team.usage_gen:
            share = dominant_share(self.book, team.book)
            team.share = (team.usage_gen, share)
        return share

    def spare_work(self, team: TeamState, f: int) -> list[Job]:
        """The team's running work on `f` whose eviction alone leaves it at or above its nominal quota on every
        resource that work uses: the only work of a team another team's fair-share or lower-priority claim can
        take (taking more of its work first only lowers its usage further). Kept until it starts or stops
        work on `f`."""
        gen = self.team_gen.get((team.idx, f), 0)
        known = team.spare.get(f)
        if known is None or known[0] != gen:
            usage, nominal = team.book.usage[f], team.book.nominal[f]
            work = [job for job in team.running[f] if all(usage[r] - job.total[r] >= nominal[r] - EPS for r in job.nz)]
            known = team.spare[f] = (gen, work)
        return known[1]

    def fair_share(self, team: TeamState):
        group = team.group
        version = self.demand_version.get(group, 0)
        cached = self._fair_cache.get(group)
        if cached is None or cached[0] != version:
            members = team.book.cohort.members if team.book.cohort is not None else [team.book]
            # Only the rows of teams whose usage or pending work changed since the shares were computed can
            # differ: those are read again, not the whole cohort's (a thousand teams, after every admission).
            touched = self._demand_touched.pop(group, None)
            if cached is not None and touched is not None:
                rows = {idx: self._demand_row(self.teams[idx]) for idx in touched}
                demand = cached[2]
                if any(demand[idx] != row for idx, row in rows.items()):
                    demand = {**demand, **rows}
            else:
                demand = {member.idx: self._demand_row(self.teams[member.idx]) for member in members}
            # Fair shares depend on the demand alone (and the configuration): an admission or an eviction moves
            # demand between pending and running without changing it, so the shares stay as they were.
            if cached is not None and (demand is cached[2] or demand == cached[2]):
                cached = (version, cached[1], cached[2])
            else:
                cached = (version, fair_shares(self.book, members, demand), demand)
            self._fair_cache[group] = cached
        return cached[1][team.idx]

    @staticmethod
    def _demand_row(team: TeamState) -> list[list[float]]:
        """The team's demand: its usage plus its pending requests, per instance type and resource."""
        return [
            [u + p for u, p in zip(urow, prow, strict=True)]
            for urow, prow in zip(team.book.usage, team.pending_demand, strict=True)
        ]
