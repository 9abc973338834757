"""Quota arithmetic: proportional defaults, borrowing and lending limits, and the usage ledger.

The ledger (`QuotaBook`) keeps, per team, instance type and resource, the nominal quota, the most the team
may use (nominal plus what it may borrow), the part it keeps back from lending, and its usage; per cohort,
how much its members draw on the cohort's lendable pool. Checking whether a request fits is a handful of
array look-ups, and every admission, eviction and finish updates the aggregates in place.

Model (Kueue's): a team's *guaranteed* part is its nominal quota less what it lends; usage above that part
draws on the cohort's pool, which is the members' lendable quota plus, where a cluster is given, the
capacity no team's quota covers (shared by borrowers of every cohort).
"""

from __future__ import annotations

from .model import Team

EPS = 1e-9
INF = float("inf")
NON_ACCELERATORS = ("cpu", "memory")

FITS, CAPACITY, COHORT, TEAM = 0, 1, 2, 3  # why a request does not fit, most fundamental last


def is_accelerator(resource: str) -> bool:
    return resource not in NON_ACCELERATORS


def proportional_defaults(capacity: dict[str, float], given: dict[str, float]) -> dict[str, float]:
    """Fill the resources `given` does not name in proportion to the instance type's capacity.

    The proportion is set by the accelerators `given` names (the largest fraction if several), else by
    vCPUs ("cpu"), else by memory. `gpu: 2` on {gpu: 8, cpu: 192, memory: 2048} gives
    {gpu: 2, cpu: 48, memory: 512}. Without a usable proportion, `given` is returned unchanged.
    """
    out = {r: float(v) for r, v in given.items()}
    fraction = _fraction(capacity, given)
    if fraction is not None:
        for resource, per_node in capacity.items():
            out.setdefault(resource, per_node * fraction)
    return out


def _fraction(capacity: dict[str, float], given: dict[str, float]) -> float | None:
    accelerators = [r for r in given if is_accelerator(r) and capacity.get(r, 0) > 0]
    if accelerators:
        return max(given[r] / capacity[r] for r in accelerators)
    for resource in NON_ACCELERATORS:
        if resource in given and capacity.get(resource, 0) > 0:
            return given[resource] / capacity[resource]
    return None


def resolve_quota(capacity: dict[str, float] | None, entry: dict) -> dict[str, float]:
    """One nominal-quota entry: `{"count": n}` is n whole instances, else proportional defaults."""
    if "count" in entry:
        if len(entry) > 1:
            raise ValueError("count cannot be combined with resource amounts")
        if not capacity:
            raise ValueError("count needs the instance type's capacity (list it under cluster.instance_types)")
        return {r: per_node * entry["count"] for r, per_node in capacity.items()}
    return proportional_defaults(capacity or {}, entry)


class CohortBook:
    """A cohort's members and how much of its lendable pool they draw, per instance type and resource."""

    def __init__(self, name: str, flavors: int, resources: int):
        self.name = name
        self.members: list[TeamBook] = []
        self.lendable = [[0.0] * resources for _ in range(flavors)]
        self.draw = [[0.0] * resources for _ in range(flavors)]
        self.excess = [[0.0] * resources for _ in range(flavors)]  # draw beyond the members' lendable


class TeamBook:
    """One team's limits and usage as arrays indexed [instance type][resource]."""

    def __init__(self, idx: int, team: Team, fidx: dict[str, int], ridx: dict[str, int]):
        self.idx = idx
        self.team = team
        self.name = team.name
        self.weight = float(team.fair_share_weight)
        self.cohort: CohortBook | None = None
        self.may_borrow = team.cohort is not None and team.sharing == "LendAndBorrow"
        lends = team.cohort is not None and team.sharing != "DontLend"
        shape = (len(fidx), len(ridx))
        self.nominal = _grid(shape, 0.0)
        for flavor, amounts in team.quota.items():
            for resource, amount in amounts.items():
                self.nominal[fidx[flavor]][ridx[resource]] = float(amount)
        self.borrow_limit = _grid(shape, INF if self.may_borrow else 0.0)
        if self.may_borrow and team.borrow_limit_pct is not None:
            share = team.borrow_limit_pct / 100.0
            self.borrow_limit = [[n * share for n in row] for row in self.nominal]
        if self.may_borrow:
            _override(self.borrow_limit, team.borrowing_limit, fidx, ridx)
        lending_cap = _grid(shape, INF)
        _override(lending_cap, team.lending_limit, fidx, ridx)
        self.lendable = [
            [min(n, cap) if lends else 0.0 for n, cap in zip(nrow, crow, strict=True)]
            for nrow, crow in zip(self.nominal, lending_cap, strict=True)
        ]
        self.guaranteed = [
            [n - lend for n, lend in zip(nrow, lrow, strict=True)]
            for nrow, lrow in zip(self.nominal, self.lendable, strict=True)
        ]
        self.limit = [
            [n + b for n, b in zip(nrow, brow, strict=True)]
            for nrow, brow in zip(self.nominal, self.borrow_limit, strict=True)
        ]
        self.usage = _grid(shape, 0.0)

    def borrowing(self, f: int, resources) -> bool:
        usage, nominal = self.usage[f], self.nominal[f]
        return any(usage[r] > nominal[r] + EPS for r in resources)


def _grid(shape: tuple[int, int], value: float) -> list[list[float]]:
    return [[value] * shape[1] for _ in range(shape[0])]


def _override(grid, limits: dict | None, fidx, ridx) -> None:
    for flavor, amounts in (limits or {}).items():
        for resource, amount in amounts.items():
            grid[fidx[flavor]][ridx[resource]] = float(amount)


class QuotaBook:
    """Usage aggregates for every team, cohort and instance type, and the fit test built on them."""

    def __init__(self, flavors: list[str], resources: list[str], teams: list[Team], capacity_total):
        self.flavors = flavors
        self.resources = resources
        self.fidx = {name: i for i, name in enumerate(flavors)}
        self.ridx = {name: i for i, name in enumerate(resources)}
        shape = (len(flavors), len(resources))
        self.capacity_total = capacity_total  # [f][r], INF where no cluster limit
        self.used = _grid(shape, 0.0)
        self.teams = [TeamBook(i, team, self.fidx, self.ridx) for i, team in enumerate(teams)]
        self.cohorts: dict[str, CohortBook] = {}
        for book in self.teams:
            name = book.team.cohort
            if name is None:
                continue
            cohort = self.cohorts.get(name) or self.cohorts.setdefault(name, CohortBook(name, *shape))
            cohort.members.append(book)
            book.cohort = cohort
            for f in range(shape[0]):
                for r in range(shape[1]):
                    cohort.lendable[f][r] += book.lendable[f][r]
        self.uncovered = _grid(shape, 0.0)
        for f in range(shape[0]):
            for r in range(shape[1]):
                cap = capacity_total[f][r]
                if cap != INF:
                    self.uncovered[f][r] = max(0.0, cap - sum(b.nominal[f][r] for b in self.teams))
        self.excess_total = _grid(shape, 0.0)

    def pool(self, cohort: CohortBook, f: int, r: int) -> float:
        return cohort.lendable[f][r] + self.uncovered[f][r]

    def check(self, t: TeamBook, f: int, total, nz, removed=None) -> tuple[int, bool]:
        """Does `total` (a request vector, nonzero at `nz`) fit team `t` on flavor `f`?

        `removed` (team index -> vector on `f`) evaluates the request as if those amounts were freed,
        which is how preemption tests a victim set. Returns (FITS or why not, whether it borrows).
        """
        rem_t = removed.get(t.idx) if removed else None
        usage, limit, nominal = t.usage[f], t.limit[f], t.nominal[f]
        cohort = t.cohort
        code, borrows = FITS, False
        for r in nz:
            q = total[r]
            u = usage[r] - rem_t[r] if rem_t else usage[r]
            nu = u + q
            if nu > limit[r] + EPS:
                return TEAM, borrows
            if nu > nominal[r] + EPS:
                borrows = True
            if code == COHORT:
                continue
            if cohort is not None:
                g = t.guaranteed[f][r]
                grows = (nu - g if nu > g else 0.0) - (u - g if u > g else 0.0)
                if grows > EPS:
                    draw = cohort.draw[f][r] + grows
                    if removed:
                        draw -= self._released_draw(cohort, f, r, removed)
                    excess = draw - cohort.lendable[f][r]
                    excess = excess if excess > 0 else 0.0
                    if self.excess_total[f][r] - cohort.excess[f][r] + excess > self.uncovered[f][r] + EPS:
                        code = COHORT
                        continue
            cap = self.capacity_total[f][r]
            if cap != INF:
                used = self.used[f][r]
                if removed:
                    used -= sum(vec[r] for vec in removed.values())
                if used + q > cap + EPS:
                    code = CAPACITY
        return code, borrows

    def _released_draw(self, cohort: CohortBook, f: int, r: int, removed) -> float:
        released = 0.0
        for idx, vec in removed.items():
            v = self.teams[idx]
            if v.cohort is cohort and vec[r]:
                g, u = v.guaranteed[f][r], v.usage[f][r]
                after = u - vec[r]
                released += (u - g if u > g else 0.0) - (after - g if after > g else 0.0)
        return released

    def apply(self, t: TeamBook, f: int, total, nz, sign: int) -> None:
        """Add (sign 1) or remove (sign -1) a request's usage everywhere it is counted."""
        usage = t.usage[f]
        used = self.used[f]
        cohort = t.cohort
        for r in nz:
            q = total[r] * sign
            u = usage[r]
            nu = u + q
            if -EPS < nu < EPS:
                nu = 0.0
            usage[r] = nu
            used[r] += q
            if cohort is None:
                continue
            g = t.guaranteed[f][r]
            grows = (nu - g if nu > g else 0.0) - (u - g if u > g else 0.0)
            if grows:
                draw = cohort.draw[f][r] + grows
                cohort.draw[f][r] = draw
                excess = draw - cohort.lendable[f][r]
                excess = excess if excess > EPS else 0.0
                self.excess_total[f][r] += excess - cohort.excess[f][r]
                cohort.excess[f][r] = excess
