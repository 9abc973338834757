"""The team status as it was computed cell by cell before it skipped empty rows and summed the cohort's idle room
once per state (scheduling/engine/status.py): the reference the tests compare it with."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduling.engine.model import TeamStatus
from scheduling.engine.quota import EPS, INF

if TYPE_CHECKING:
    from scheduling.engine.admission import Scheduler, TeamState


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

    def grid(values, keep) -> dict[str, dict[str, float]]:
        out = {}
        for f, row in enumerate(values):
            cells = {resources[r]: num(v) for r, v in enumerate(row) if keep(f, r, v)}
            if cells:
                out[flavors[f]] = cells
        return out

    def named(f: int, r: int) -> bool:
        return resources[r] in book.team.quota.get(flavors[f], {}) or resources[r] in (
            (book.team.borrowing_limit or {}).get(flavors[f], {})
        )

    limits = grid(book.borrow_limit, lambda f, r, v: v != INF and named(f, r))
    borrowed = [
        [max(0.0, u - n) for u, n in zip(ur, nr, strict=True)] for ur, nr in zip(book.usage, book.nominal, strict=True)
    ]
    return TeamStatus(
        quota=quota,
        borrowing_limit=limits or None,
        usage=grid(book.usage, lambda f, r, v: v > EPS),
        borrowed=grid(borrowed, lambda f, r, v: v > EPS),
        lent=grid(_lent(s, team), lambda f, r, v: v > EPS),
        fair_share=grid(s.fair_share(team), lambda f, r, v: v > EPS or named(f, r)),
        pending=team.queue.size,
        borrowable=grid(borrowable(s, team), lambda f, r, v: v > EPS or named(f, r)),
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
    for f, row in enumerate(out):
        for r in range(len(row)):
            usage, nominal = book.usage[f][r], book.nominal[f][r]
            left = book.borrow_limit[f][r] - max(0.0, usage - nominal)
            # reaching its own nominal quota first draws the team's own lendable part from the pool
            own = max(0.0, nominal - max(usage, book.guaranteed[f][r]))
            row[r] = max(0.0, min(left, idle_to_lend(s, team, f, r) - own))
    return out


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
    of the scheduler, so every team's status costs its own cells, not its whole cohort's (1,000 teams)."""
    cache = s.__dict__.setdefault("_lending_cache", {})
    if cache.get("changes") != s.changes:
        cache.clear()
        cache["changes"] = s.changes
    key = cohort.name
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
