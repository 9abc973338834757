"""Per-team figures for the output: quota, borrowing limit, usage, borrowed, lent, fair share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import TeamStatus
from .quota import EPS, INF

if TYPE_CHECKING:
    from .admission import Scheduler, TeamState


def num(x: float) -> int | float:
    """Ints where integral, so JSON shows 48 rather than 48.0."""
    if x == INF:
        return x
    rounded = round(x)
    return int(rounded) if abs(x - rounded) < 1e-9 else round(x, 9)


def team_status(s: Scheduler, team: TeamState) -> TeamStatus:
    book = team.book
    flavors, resources = s.flavor_names, s.resources
    quota = {f: {r: num(v) for r, v in amounts.items()} for f, amounts in book.team.quota.items()}
    # the cells the team's quota or borrowing limit names: shown even where they are 0
    named = {(f, r) for f, amounts in book.team.quota.items() for r in amounts}
    named.update((f, r) for f, amounts in (book.team.borrowing_limit or {}).items() for r in amounts)
    named_flavors = {f for f, _ in named}

    def grid(values, with_named: bool = False, finite_named_only: bool = False) -> dict[str, dict[str, float]]:
        """The cells above 0 (and with `with_named`, the named ones); with `finite_named_only`, the named finite
        ones alone."""
        out = {}
        for f, row in enumerate(values):
            name = flavors[f]
            if finite_named_only:
                cells = {resources[r]: num(v) for r, v in enumerate(row) if v != INF and (name, resources[r]) in named}
            elif max(row, default=0.0) <= EPS and not (with_named and name in named_flavors):
                continue  # nothing above 0 and nothing named here
            else:
                cells = {
                    resources[r]: num(v)
                    for r, v in enumerate(row)
                    if v > EPS or (with_named and (name, resources[r]) in named)
                }
            if cells:
                out[name] = cells
        return out

    limits = grid(book.borrow_limit, finite_named_only=True)
    borrowed = [
        [max(0.0, u - n) for u, n in zip(ur, nr, strict=True)] for ur, nr in zip(book.usage, book.nominal, strict=True)
    ]
    return TeamStatus(
        quota=quota,
        borrowing_limit=limits or None,
        usage=grid(book.usage),
        borrowed=grid(borrowed),
        lent=grid(_lent(s, team)),
        fair_share=grid(s.fair_share(team), with_named=True),
        pending=team.queue.size,
        borrowable=grid(borrowable(s, team), with_named=True),
    )


def idle_to_lend(s: Scheduler, team: TeamState, f: int, r: int) -> float:
    """What the team's cohort has idle to lend on flavor f, resource r (its lendable quota plus uncovered
    capacity, less what members draw and what other cohorts draw of the uncovered part)."""
    cohort = team.book.cohort
    if cohort is None:
        return 0.0
    others = max(0.0, s.book.excess_total[f][r] - cohort.excess[f][r])
    return max(0.0, s.book.pool(cohort, f, r) - cohort.draw[f][r] - others)


def borrowable(s: Scheduler, team: TeamState) -> list[list[float]]:
    """Room the team could borrow now beyond its nominal quota: its remaining borrowing limit, capped by
    what its cohort has idle to lend. The figure the submit form shows beside the quota."""
    book = team.book
    out = [[0.0] * len(s.resources) for _ in s.flavor_names]
    if not book.may_borrow:
        return out
    idle = _cohort_idle(s, team)
    for f, row in enumerate(out):
        for r in range(len(row)):
            usage, nominal = book.usage[f][r], book.nominal[f][r]
            left = book.borrow_limit[f][r] - max(0.0, usage - nominal)
            if left <= 0.0:
                continue  # nothing left to borrow, whatever is idle (0.0, as the formula below gives)
            # reaching its own nominal quota first draws the team's own lendable part from the pool
            own = max(0.0, nominal - max(usage, book.guaranteed[f][r]))
            row[r] = max(0.0, min(left, idle[f][r] - own))
    return out


def _cohort_idle(s: Scheduler, team: TeamState) -> list[list[float]]:
    """idle_to_lend for every flavor and resource of the team's cohort, computed once per state of the scheduler
    (it reads only the cohort and the book's totals)."""
    cohort = team.book.cohort
    cache = _per_state(s)
    key = ("idle", cohort.name if cohort is not None else None)
    if key not in cache:
        cache[key] = [
            [idle_to_lend(s, team, f, r) for r in range(len(s.resources))] for f in range(len(s.flavor_names))
        ]
    return cache[key]


def _per_state(s: Scheduler) -> dict:
    """Figures of the scheduler's state that every team's status reads (per cohort), kept until the state changes:
    1,000 teams' statuses cost their own cells, not their whole cohort's each."""
    cache = s.__dict__.setdefault("_status_cache", {})
    if cache.get("changes") != s.changes:
        cache.clear()
        cache["changes"] = s.changes
    return cache


def _lent(s: Scheduler, team: TeamState) -> list[list[float]]:
    """Idle lendable quota in use by others, spread over the lenders in proportion to what each has idle."""
    book = team.book
    out = [[0.0] * len(s.resources) for _ in s.flavor_names]
    cohort = book.cohort
    if cohort is None:
        return out
    borrowed, total_idle = _cohort_lending(s, cohort)
    for f, row in enumerate(out):
        for r in range(len(row)):
            if borrowed[f][r] <= EPS or total_idle[f][r] <= EPS:
                continue
            idle = max(0.0, min(book.lendable[f][r], book.nominal[f][r] - book.usage[f][r]))
            row[r] = idle * min(1.0, borrowed[f][r] / total_idle[f][r])
    return out


def _cohort_lending(s: Scheduler, cohort) -> tuple[list[list[float]], list[list[float]]]:
    """What a cohort's members borrow and have idle to lend, per flavor and resource: summed once per state
    of the scheduler (see _per_state)."""
    cache = _per_state(s)
    key = ("lending", cohort.name)
    if key not in cache:
        flavors, resources = len(s.flavor_names), len(s.resources)
        borrowed = [[0.0] * resources for _ in range(flavors)]
        idle = [[0.0] * resources for _ in range(flavors)]
        for m in cohort.members:
            for f in range(flavors):
                usage, nominal, lendable = m.usage[f], m.nominal[f], m.lendable[f]
                for r in range(resources):
                    borrowed[f][r] += max(0.0, usage[r] - nominal[r])
                    idle[f][r] += max(0.0, min(lendable[r], nominal[r] - usage[r]))
        cache[key] = (borrowed, idle)
    return cache[key]
