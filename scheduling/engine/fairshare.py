"""Fair share: what each team deserves now, and how far above its nominal quota a team is.

Fair share (per instance type and resource): first each team gets its nominal quota, up to its demand;
what remains of the cohort's pool goes to the teams that may borrow and want more, in proportion to their
fair-share weights, each capped by its demand and its borrowing limit, until nobody wants more or nothing
remains. Teams of weight 0 share only what the others leave. Demand is a team's running usage plus its
pending requests, counted on the instance type they ask for, or on the first type of the team's quota
when they name none.

Share (for ordering and fair-share preemption): borrowed / cohort pool / weight, taking the dominant
resource, i.e. the largest ratio over every instance type and resource.

Pass a `FairShareTrace` to `fair_shares` and the same computation records each of its steps in plain words
with the numbers (the pool, each team's nominal part, the caps, every round of the split, the result), so
the explanation shown to people is a transcript of the figure, not a second implementation of it.
"""

from __future__ import annotations

from .quota import EPS, INF, QuotaBook, TeamBook


def fair_shares(book: QuotaBook, members: list[TeamBook], demand: dict[int, list[list[float]]], trace=None):
    """Fair share grid [flavor][resource] for each team index among `members` (one cohort, or a team alone).

    `trace` (a FairShareTrace, optional) records every step; without it nothing is formatted."""
    flavors, resources = len(book.flavors), len(book.resources)
    out = {t.idx: [[0.0] * resources for _ in range(flavors)] for t in members}
    cohort = members[0].cohort if members else None
    for f in range(flavors):
        for r in range(resources):
            given = {t.idx: min(t.nominal[f][r], demand[t.idx][f][r]) for t in members}
            note = trace.cell(book, f, r) if trace is not None else None
            if note is not None:
                note.nominal_parts(members, demand, given)
            if cohort is not None:
                pool = book.pool(cohort, f, r)
                drawn = sum(max(0.0, given[t.idx] - t.guaranteed[f][r]) for t in members)
                wants = {t.idx: min(demand[t.idx][f][r], t.limit[f][r]) - given[t.idx] for t in members if t.may_borrow}
                wants = {i: w for i, w in wants.items() if w > EPS}
                weights = {t.idx: t.weight for t in members}
                if note is not None:
                    note.pool(cohort, members, pool, drawn, given, demand, wants)
                left = _water_fill(given, wants, weights, pool - drawn, positive=True, note=note)
                _water_fill(given, wants, weights, left, positive=False, note=note)
            elif note is not None:
                note.alone(members)
            if note is not None:
                note.result(members, given)
            for idx, amount in given.items():
                out[idx][f][r] = amount
    return out


def _water_fill(given, wants, weights, remaining, positive: bool, note=None) -> float:
    """Share `remaining` among `wants` in proportion to weight; returns what nobody took."""
    takers = {i: (weights[i] if positive else 1.0) for i in wants if (weights[i] > 0) == positive}
    if note is not None:
        note.phase(positive, remaining, takers)
    while remaining > EPS and takers:
        total_weight = sum(takers.values())
        sated = [i for i, w in takers.items() if wants[i] <= remaining * w / total_weight + EPS]
        if sated:
            if note is not None:
                note.sated_round(remaining, takers, total_weight, {i: wants[i] for i in sated})
            for i in sated:
                given[i] += wants[i]
                remaining -= wants[i]
                wants[i] = 0.0
                del takers[i]
            continue
        if note is not None:
            note.split_round(remaining, takers, total_weight, wants)
        for i, w in takers.items():
            portion = remaining * w / total_weight
            given[i] += portion
            wants[i] -= portion
        remaining = 0.0
    if note is not None:
        note.left(positive, max(remaining, 0.0))
    return max(remaining, 0.0)


def dominant_share(book: QuotaBook, t: TeamBook, f: int = -1, delta=None) -> float:
    """The team's share, optionally as if `delta` (a vector on flavor `f`) were added to its usage."""
    cohort = t.cohort
    if cohort is None:
        return 0.0
    top = 0.0
    for ff, (usage, nominal) in enumerate(zip(t.usage, t.nominal, strict=True)):
        for r, u in enumerate(usage):
            if ff == f and delta is not None:
                u += delta[r]
            borrowed = u - nominal[r]
            if borrowed <= EPS:
                continue
            pool = cohort.lendable[ff][r] + book.uncovered[ff][r]
            top = max(top, borrowed / pool if pool > EPS else INF)
    if top == 0.0:
        return 0.0
    return top / t.weight if t.weight > 0 else INF
