"""Choosing victims: who may be preempted to admit a workload, and the smallest such set.

Three kinds of victim, each named in the preemption event:
- "priority": the claimant's own team's lower-priority work, where the team allows it (`within_team`, or
  `preempt_team_tasks: LowerPriority`); `LowerOrNewerEqualPriority` adds equal-priority, newer work.
- "reclaim": the claimant fits its team's nominal quota, so it takes back quota lent to teams of its
  cohort that are borrowing (only lower-priority work with `reclaim_within_cohort: LowerPriority`).
- "fair-share": with idle compute by fair share, a team below its fair share takes borrowed work from a
  team above it, never pushing that team below its nominal quota nor leaving its share below the
  claimant's share after admission (so the victim cannot turn round and preempt back). A team of weight
  0 holds borrowed capacity only until someone else wants it.
`reclaim_within_cohort: Never` keeps a team from taking anything from other teams, by reclaim or by fair
share; `borrow_within_cohort: LowerPriority` lets a borrowing claimant evict other teams' lower-priority
borrowed work ("priority"), never pushing them below nominal.
Victims are ranked lowest priority first, then most recently admitted, and taken in that order until
the claimant fits; any that turn out not to be needed are given back. If that takes several, a single
victim that suffices on its own and has no higher priority than those replaces them (fewest victims, but
never more important work to save numbers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .fairshare import dominant_share
from .placement import pods_on
from .quota import EPS, FITS

if TYPE_CHECKING:
    from .admission import Scheduler
    from .queues import Job


MAX_KNOWN_FAILURES = 1 << 16  # failed searches remembered (emptied beyond that; they are found again)


def find_victims(s: Scheduler, job: Job, f: int):
    """(victims as [(job, reason)], nodes) that let `job` run on flavor `f`, or None.

    A search that fails is remembered (Scheduler.no_victims) and not run again while nothing it read has
    changed. What a search reads: the claimant's team (fixed), priority, submit time (only where equal
    priority newer work is a victim), per-pod shape and pods; on flavor `f` every team's usage, running work
    and the nodes, all changed only by a start or stop on `f` (Scheduler.flavor_gen); the protected set (the
    cache is emptied when it changes); where the fair share is consulted, whether the team is below it (read
    again, it depends on pending demand too); and where a victim is a fair-share one, the dominant shares of
    its cohort's teams, which read their usage on every type (Scheduler.group_gen). Nothing else (not the
    time, not other types' nodes), so a search run again in the same state fails again.
    """
    team = job.team
    key = (team.idx, f, job.priority, job.pods, tuple(job.per_pod),
           job.submit if team.within == "LowerOrNewerEqualPriority" else None)  # fmt: skip
    known = s.no_victims.get(key)
    if (
        known is not None
        and (known[0] == s.flavor_gen[f] if known[3] == "type" else known[0] == s.team_gen.get((team.idx, f), 0))
        and (known[1] is None or known[1] == s.group_gen.get(team.group, 0))
        and (known[2] is None or known[2] == _below_fair_share(s, job, f))
    ):
        s.searches[1] += 1
        return None
    s.searches[0] += 1
    pool = s.pools[f]
    if pool is not None and pool.pods_room_empty(job.per_pod, job.nz) < job.pods:
        # the gang does not fit even on empty nodes: whoever runs, every search fails (on the nodes, after
        # any quota check); remembered like any failure, though nothing but the inventory could change it
        s.no_victims[key] = (s.flavor_gen[f], None, None, "type")
        return None
    candidates, below, claim, shares_read = _candidates(s, job, f)
    found = _search(s, job, f, candidates)
    if found is not None:
        s.victim_candidates = frozenset(victim for victim, _ in candidates)
    else:
        if len(s.no_victims) >= MAX_KNOWN_FAILURES:
            s.no_victims.clear()
        if not candidates and claim is None:
            # nobody to evict, and the other teams were not read: only the team's own work on `f` (its usage,
            # its lower-priority work) and whether it is below its fair share (read again) can change that,
            # so other teams' starts and stops there (a cascade of reclaims) do not search it again
            s.no_victims[key] = (s.team_gen.get((team.idx, f), 0), None, below, "team")
        else:
            group = s.group_gen.get(team.group, 0) if shares_read else None
            s.no_victims[key] = (s.flavor_gen[f], group, below, "type")
    return found


def _search(s: Scheduler, job: Job, f: int, candidates: list):
    if not candidates:
        return None
    everyone: dict[int, list[float]] = {}
    for victim, _ in candidates:
        vec = everyone.get(victim.team.idx)
        if vec is None:
            vec = everyone[victim.team.idx] = [0.0] * len(victim.total)
        for r in victim.nz:
            vec[r] += victim.total[r]
    if s.book.check(job.team.book, f, job.total, job.nz, everyone)[0] != FITS:
        return None  # not even evicting every candidate would make room in the quota
    claimant_share = dominant_share(s.book, job.team.book, f, job.total)
    # Only victims eligible before any of their team's work is gone can ever be taken: eligibility only narrows
    # as more of a team's work is taken (its usage after eviction falls, and with it its share). So if evicting
    # all of those would not make room, in the quota or on the nodes, no search can succeed (evicting fewer
    # frees less). On the nodes this is asked without placing over every node: counted per distinct free
    # vector and per node freed (NodePool.can_place).
    eligible: dict[tuple, bool] = {}
    possible = Trial(s, job, f)
    for victim, reason in candidates:
        size = (victim.team.idx, reason, tuple(victim.total))
        ok = eligible.get(size)
        if ok is None:
            ok = eligible[size] = _eligible(s, job, victim, reason, {}, claimant_share)
        if ok:
            possible.add(victim)
    if not possible.removed or possible.fits(whether=True) is False:
        return None
    pool = s.pools[f]
    candidates.sort(key=lambda c: (c[0].priority, -c[0].admitted_at, -c[0].seq))
    if pool is not None and job.pods > 1:
        candidates = _node_by_node(job, candidates, pool)
    trial = Trial(s, job, f, counted=True)
    chosen = []
    refused: dict[int, list] = {}  # team -> victim sizes found ineligible; evicting more never helps them
    within = _WithinNominal(job, f)
    for victim, reason in candidates:
        seen = refused.get(victim.team.idx)
        if seen and any(all(victim.total[r] >= size[r] for r in nz) for size, nz in seen):
            continue
        if not _eligible(s, job, victim, reason, trial.removed, claimant_share):
            if seen is None:
                seen = refused[victim.team.idx] = []
            if len(seen) < 4 and victim.team is not job.team:
                seen.append((victim.total, victim.nz))
            continue
        trial.add(victim)
        chosen.append((victim, reason))
        nodes = trial.fits() if within.add(victim, reason) else False
        if nodes is not False:
            break
    else:
        return None
    if len(chosen) == 1:
        return chosen, nodes
    ceiling = max(victim.priority for victim, _ in chosen)
    # one victim at a time: added, tried (the cheap checks first), taken out again
    alone = Trial(s, job, f, counted=True)
    for victim, reason in candidates:
        if victim.priority > ceiling:
            break
        alone.add(victim)
        if (
            alone.fits(quick=True) is not False
            and _eligible(s, job, victim, reason, {}, claimant_share)
            and _reclaimer_within_nominal(s, job, f, [(victim, reason)])
            and alone.placeable()
        ):
            nodes = alone.fits()
            if nodes is not False:
                return [(victim, reason)], nodes
        alone.add(victim, -1)
    for i in range(len(chosen) - 2, -1, -1):
        victim = chosen[i][0]
        trial.add(victim, -1)
        rest = chosen[:i] + chosen[i + 1 :]
        # the quick check (quota, and pods by the key resource) rules most out before a placement is tried,
        # and where the job asks for the key resource alone it is the whole answer
        if (
            trial.fits(quick=True) is not False
            and _reclaimer_within_nominal(s, job, f, rest)
            and (trial.exact or trial.placeable())
        ):
            del chosen[i]
        else:
            trial.add(victim, 1)
    return chosen, trial.fits()


def _node_by_node(job: Job, candidates: list, pool) -> list:
    """A gang's candidates, node by node: for every node, the fewest victims (in victim order) that make room
    for one pod there; nodes are taken cheapest first (no victim, then the lowest highest priority evicted,
    then the fewest victims), and their victims lead the order. Evicting across every node in global victim
    order would empty many nodes partly before any gang pod fits."""
    per_pod, nz = job.per_pod, job.nz
    on_node: dict[int, list] = {}
    for candidate in candidates:
        for node in dict.fromkeys(candidate[0].nodes or ()):
            on_node.setdefault(node, []).append(candidate)
    need = [per_pod[r] - EPS for r in nz]
    pool_free = pool.free
    costs = []
    for node, here in on_node.items():
        base = pool_free[node]
        free = [base[r] for r in nz]  # only what the pod asks for is ever read
        taken = 0  # the first `taken` victims here make room
        for victim, _ in here:
            if all(a >= b for a, b in zip(free, need, strict=True)):
                break
            taken += 1
            share = victim.nodes.count(node)
            more = victim.per_pod
            for i, r in enumerate(nz):
                free[i] += more[r] * share
        if all(a >= b for a, b in zip(free, need, strict=True)):
            top = max((here[i][0].priority for i in range(taken)), default=float("-inf"))
            costs.append((top, taken, node, here))
    costs.sort(key=lambda c: c[:3])
    ordered, seen = [], set()
    for _, taken, _, here in costs:
        for candidate in here[:taken]:
            if id(candidate[0]) not in seen:
                seen.add(id(candidate[0]))
                ordered.append(candidate)
    return ordered + [c for c in candidates if id(c[0]) not in seen]


def _reclaimer_within_nominal(s: Scheduler, job: Job, f: int, chosen) -> bool:
    """A reclaimer never ends up borrowing: with reclaim victims, once all its victims are gone (its own
    team's included), its team's usage plus its request fits the nominal quota on every resource it asks."""
    if not any(reason == "reclaim" for _, reason in chosen):
        return True
    book = job.team.book
    freed = [0.0] * len(job.total)
    for victim, _ in chosen:
        if victim.team is job.team:
            for r in victim.nz:
                freed[r] += victim.total[r]
    usage, nominal = book.usage[f], book.nominal[f]
    return all(usage[r] - freed[r] + job.total[r] <= nominal[r] + EPS for r in job.nz)


class _WithinNominal:
    """_reclaimer_within_nominal kept incrementally as victims are added one by one."""

    def __init__(self, job: Job, f: int):
        self.job, self.reclaims = job, False
        book = job.team.book
        self.usage, self.nominal = book.usage[f], book.nominal[f]
        self.freed = [0.0] * len(job.total)

    def add(self, victim: Job, reason: str) -> bool:
        job = self.job
        self.reclaims = self.reclaims or reason == "reclaim"
        if victim.team is job.team:
            for r in victim.nz:
                self.freed[r] += victim.total[r]
        if not self.reclaims:
            return True
        usage, nominal, freed = self.usage, self.nominal, self.freed
        return all(usage[r] - freed[r] + job.total[r] <= nominal[r] + EPS for r in job.nz)


class Trial:
    """A hypothetical eviction set: quota freed per team and room freed per node, kept incrementally."""

    count_room = True  # see __init__; the tests compare decisions with it off

    def __init__(self, s: Scheduler, job: Job, f: int, counted: bool = False):
        self.s, self.job, self.f = s, job, f
        self.removed: dict[int, list[float]] = {}
        self.pool = s.pools[f]
        self.extra: dict[int, list[float]] = {}
        if self.pool is not None:
            self.key = self.pool.key
            self.need = job.per_pod[self.key]
            self.pods_fit = self.pool.pods_fit(self.need) if self.need > 0 else job.pods
        # pods counted by the key resource fit for sure when the job asks for nothing else
        self.exact = self.pool is None or (self.need > 0 and set(job.nz) <= {self.key})
        # Counted: how many of the gang's pods the nodes hold, every resource it asks for counted (what
        # NodePool.can_place counts), brought up to date on the nodes victims came and went from since it was
        # last asked; a placement is then tried only where it succeeds. Worth it where victims are added and
        # taken out one at a time, and asked about after each.
        self.counted = counted and self.count_room and self.pool is not None and bool(job.nz)
        self.room: int | None = None  # counted on first use
        self.stale: set[int] = set()
        self.node_room: dict[int, int] = {}  # node -> its pods as counted in `room`, where victims came or went

    def add(self, victim: Job, sign: int = 1) -> None:
        _take(self.removed, victim, sign)
        if self.pool is None or not victim.nodes:
            return
        free, key, need = self.pool.free, self.key, self.need
        if self.counted:
            self.stale.update(victim.nodes)
        for node in victim.nodes:
            vec = self.extra.get(node)
            if vec is None:
                vec = self.extra[node] = [0.0] * len(victim.total)
            before = vec[key]
            for r in victim.nz:
                vec[r] += sign * victim.per_pod[r]
            if need > 0:
                self.pods_fit += int((free[node][key] + vec[key] + EPS) // need) - int(
                    (free[node][key] + before + EPS) // need
                )
            if sign < 0 and not any(vec):
                del self.extra[node]  # given back whole: placements need not visit it (it adds nothing)

    def placeable(self) -> bool:
        """Whether the gang's pods fit on the nodes once these victims are gone, counted without placing them
        (NodePool.can_place: exactly when `place` would find nodes), the quota aside."""
        job, pool = self.job, self.pool
        if pool is None:
            return True
        if not self.counted:
            return pool.can_place(job.per_pod, job.nz, job.pods, self.extra)
        per_pod, nz, pods = job.per_pod, job.nz, job.pods
        if self.room is None:
            self.room = pool.pods_placeable(per_pod, nz, pods)
        free, extra, node_room = pool.free, self.extra, self.node_room
        for node in self.stale:
            old = node_room.get(node)
            if old is None:
                old = pods_on(free[node], per_pod, nz, pods)
            more = extra.get(node)
            here = free[node] if more is None else [a + b for a, b in zip(free[node], more, strict=True)]
            node_room[node] = new = pods_on(here, per_pod, nz, pods)
            self.room += new - old
        self.stale.clear()
        return self.room >= pods

    def fits(self, quick: bool = False, whether: bool = False):
        """Nodes (None without a cluster) if the job fits once these victims are gone, else False.

        With `quick`, only the quota and a count of pods that fit by the key resource are checked. With
        `whether`, None stands for the nodes: the placement is asked only whether it would succeed.
        """
        if self.pool is not None and self.pods_fit < self.job.pods:
            return False
        if self.counted and not quick and not self.placeable():
            return False  # (the quota is dearer to check than the count)
        code, _ = self.s.book.check(self.job.team.book, self.f, self.job.total, self.job.nz, self.removed)
        if code != FITS:
            return False
        if self.pool is None:
            return None
        if quick:
            return None
        if whether:
            return None if self.placeable() else False
        nodes = self.pool.place(self.job.per_pod, self.job.nz, self.job.pods, self.extra)
        return False if nodes is None else nodes


def removal(victims, f: int) -> dict[int, list[float]]:
    removed: dict[int, list[float]] = {}
    for victim, _ in victims:
        _take(removed, victim, 1)
    return removed


def _take(removed, victim: Job, sign: int) -> None:
    vec = removed.get(victim.team.idx)
    if vec is None:
        vec = removed[victim.team.idx] = [0.0] * len(victim.total)
    for r in victim.nz:
        vec[r] += sign * victim.total[r]


def _candidates(s: Scheduler, job: Job, f: int) -> tuple[list, bool | None, str | None, bool]:
    """Who may be evicted for `job` on `f`, with the reason of each; whether the team was found below its
    fair share (None where that was not asked); the reason other teams' work was looked at for ("reclaim",
    "fair-share" or "priority"; None where it was not); and whether their dominant shares (read on every
    type) chose among them."""
    team = job.team
    protected = s.protected
    out = []
    freed = [0.0] * len(job.total)
    if team.within != "Never":
        newer_too = team.within == "LowerOrNewerEqualPriority"
        for victim in team.running[f]:
            if victim in protected:
                continue
            if victim.priority < job.priority or (
                newer_too and victim.priority == job.priority and victim.submit > job.submit
            ):
                out.append((victim, "priority"))
                for r in victim.nz:
                    freed[r] += victim.total[r]
    book = team.book
    cohort = book.cohort
    if cohort is None:
        return out, None, None, False
    usage, nominal = book.usage[f], book.nominal[f]
    takes = team.reclaim != "Never"
    below = None
    if takes and all(usage[r] - freed[r] + job.total[r] <= nominal[r] + EPS for r in job.nz):
        reason = "reclaim"
    elif takes and s.fair and (below := _below_fair_share(s, job, f)):
        reason = "fair-share"
    elif team.borrow_within == "LowerPriority":
        reason = "priority"
    else:
        return out, below, None, False
    lower_only = reason == "priority" or team.reclaim == "LowerPriority"
    if reason == "fair-share":
        # A fair-share victim's team keeps a share at least the claimant's after the eviction, and an eviction
        # only lowers a share: borrowers are read highest share first, and those below the claimant's share
        # are passed over whole. (A team of weight 0 that borrows has an infinite share: it comes first.)
        floor = dominant_share(s.book, book, f, job.total) - EPS
        shares_read = any(other is not book for _, other in _ranked_borrowers(s, cohort, f, job.nz))
        works = []
        for share, other, work in _ranked_spare(s, cohort, f, job.nz):
            if share < floor:
                break
            if other is not book:
                works.append(work)
    else:
        # a reclaim takes any of a borrower's work; other claims only work whose eviction leaves its team at or
        # above its nominal quota (Scheduler.spare_work)
        works = [
            s.teams[other.idx].running[f] if reason == "reclaim" else s.spare_work(s.teams[other.idx], f)
            for other in _borrowers(s, cohort, f, job.nz)
            if other is not book
        ]
        shares_read = False
    for work in works:
        for victim in work:
            if victim in protected or (lower_only and victim.priority >= job.priority):
                continue
            if any(victim.total[r] > 0 for r in job.nz):
                out.append((victim, reason))
    return out, below, reason, shares_read


def _borrowers(s: Scheduler, cohort, f: int, nz) -> list:
    """The cohort's members borrowing on `f` in any of `nz`, in member order; kept while nothing starts or
    stops on `f` (usage on `f` changes only then)."""
    key = (cohort.name, f, nz)
    known = s.borrowers.get(key)
    if known is not None and known[0] == s.flavor_gen[f]:
        return known[1]
    members = [other for other in cohort.members if other.borrowing(f, nz)]
    if len(s.borrowers) >= MAX_KNOWN_FAILURES:
        s.borrowers.clear()
    s.borrowers[key] = (s.flavor_gen[f], members)
    return members


def _ranked_borrowers(s: Scheduler, cohort, f: int, nz) -> list[tuple[float, object]]:
    """_borrowers as (dominant share, team book), highest share first; kept while nothing starts or stops on
    `f` nor anywhere in the cohort (shares read usage on every type)."""
    key = (cohort.name, f, nz)
    gens = (s.flavor_gen[f], s.group_gen.get(cohort.name, 0))
    known = s.ranked.get(key)
    if known is not None and known[0] == gens:
        return known[1]
    ranked = sorted(
        ((s.dominant_share(s.teams[other.idx]), other) for other in _borrowers(s, cohort, f, nz)),
        key=lambda pair: (-pair[0], pair[1].idx),
    )
    if len(s.ranked) >= MAX_KNOWN_FAILURES:
        s.ranked.clear()
    s.ranked[key] = (gens, ranked)
    return ranked


def _ranked_spare(s: Scheduler, cohort, f: int, nz) -> list[tuple[float, object, list]]:
    """_ranked_borrowers, each with its spare work on `f` (Scheduler.spare_work) that asks for any of `nz`, and
    those with none left out: the fair-share victims, before the claimant's own floor and the protected set.
    Kept as long as _ranked_borrowers (spare work changes only with a start or stop on `f`)."""
    key = (cohort.name, f, nz)
    gens = (s.flavor_gen[f], s.group_gen.get(cohort.name, 0))
    known = s.ranked_spare.get(key)
    if known is not None and known[0] == gens:
        return known[1]
    ranked = []
    for share, other in _ranked_borrowers(s, cohort, f, nz):
        work = [v for v in s.spare_work(s.teams[other.idx], f) if any(v.total[r] > 0 for r in nz)]
        if work:
            ranked.append((share, other, work))
    if len(s.ranked_spare) >= MAX_KNOWN_FAILURES:
        s.ranked_spare.clear()
    s.ranked_spare[key] = (gens, ranked)
    return ranked


def _below_fair_share(s: Scheduler, job: Job, f: int) -> bool:
    usage = job.team.book.usage[f]
    share = s.fair_share(job.team)[f]
    return any(usage[r] < share[r] - EPS for r in job.nz)


def _eligible(s: Scheduler, job: Job, victim: Job, reason: str, removed, claimant_share: float) -> bool:
    if reason == "priority" and victim.team is job.team:
        return True
    other = victim.team.book
    f = victim.flavor
    gone = removed.get(other.idx)
    after = [
        u - (gone[r] if gone else 0.0) - (victim.total[r] if reason != "reclaim" else 0.0)
        for r, u in enumerate(other.usage[f])
    ]
    if reason == "reclaim":
        return any(after[r] > other.nominal[f][r] + EPS for r in job.nz)
    if any(after[r] < other.nominal[f][r] - EPS for r in victim.nz):
        return False
    if reason == "priority":
        return True
    if other.weight == 0 and job.team.book.weight > 0:
        return True
    # A team *above* the claimant: its share now is higher, strictly. Equal shares (the same borrowing weighed
    # the same, or both dominated by what they borrow on another type) would swap work for nothing, and the
    # victim could at once take it back: the two would evict each other pass after pass. With the condition
    # after admission below, no victim can ever turn round (it would need to be above the claimant then).
    if s.dominant_share(victim.team) <= s.dominant_share(job.team) + EPS:
        return False
    delta = [a - u for a, u in zip(after, other.usage[f], strict=True)]
    return dominant_share(s.book, other, f, delta) >= claimant_share - EPS
