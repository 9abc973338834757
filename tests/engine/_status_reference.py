"""The team status as it was computed cell by cell, before it skipped empty rows and read the cohort's idle room
once per state (scheduling/engine/status.py): team_status and borrowable as they were, the reference the tests
compare with; the parts that did not change are the module's own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduling.engine.model import TeamStatus
from scheduling.engine.quota import EPS, INF
from scheduling.engine.status import _lent, idle_to_lend, num

if TYPE_CHECKING:
    from scheduling.engine.admission import Scheduler, TeamState


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
