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
    for f, row in enumerate(out):
        for r in range(len(row)):
            borrowed = sum(max(0.0, m.usage[f][r] - m.nominal[f][r]) for m in cohort.members)
            if borrowed <= EPS:
                continue
            idle = {m.idx: max(0.0, min(m.lendable[f][r], m.nominal[f][r] - m.usage[f][r])) for m in cohort.members}
            total_idle = sum(idle.values())
            if total_idle > EPS:
                row[r] = idle[book.idx] * min(1.0, borrowed / total_idle)
    return out
