"""The fair share explained: `fair_shares()` in fairshare.py, run with a trace, narrates its own steps.

Each instance type and resource gets a `CellNote`: the lines the computation wrote while it ran, in plain
words with the numbers, ending on one result line per team carrying the exact figure it computed. Nothing
here decides anything; it only formats what fair_shares() hands it at each step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .fairshare import fair_shares
from .quota import EPS, INF

if TYPE_CHECKING:
    from .admission import Scheduler
    from .quota import CohortBook, QuotaBook, TeamBook

UNITS = {"gpu": "GPUs", "neuron": "Neuron devices", "cpu": "vCPUs", "memory": "GiB of memory"}


def fmt(x: float) -> str:
    """48 rather than 48.0; two decimals where it is not whole; 'no limit' for infinity."""
    if x == INF:
        return "no limit"
    if abs(x - round(x)) < 1e-9:
        return str(int(round(x)))
    return f"{x:.2f}"


@dataclass
class Line:
    text: str
    kind: str  # "pool" | "nominal" | "cap" | "round" | "left" | "result" | "alone"
    team: str | None = None  # the team the line is about, where it is about one
    value: float | None = None  # result lines: the fair share, exactly as computed; nominal lines: the demand


@dataclass
class CellNote:
    instance_type: str
    resource: str
    names: dict[int, str]
    _cell: tuple[int, int]
    lines: list[Line] = field(default_factory=list)
    _idle: set = field(default_factory=set)  # indices of teams with neither quota nor demand on this cell

    @property
    def unit(self) -> str:
        return UNITS.get(self.resource, self.resource)

    def _add(self, text: str, kind: str, team: str | None = None, value: float | None = None) -> None:
        self.lines.append(Line(text, kind, team, value))

    def _list(self, amounts: dict[int, float], suffix=None) -> str:
        return ", ".join(f"{self.names[i]} {fmt(v)}{suffix(i) if suffix else ''}" for i, v in amounts.items())

    # --- called by fair_shares() -----------------------------------------------------------------------

    def nominal_parts(self, members: list[TeamBook], demand, given) -> None:
        f, r = self._cell
        idle = []
        for t in members:
            d, n = demand[t.idx][f][r], t.nominal[f][r]
            if d <= EPS and n <= EPS:
                idle.append(t.idx)
                continue
            demand_words = f"its demand (running and waiting work) {fmt(d)}"
            if d <= n + EPS:
                why = f"{demand_words} is within its nominal quota {fmt(n)}, so it first gets {fmt(d)}"
            else:
                why = f"{demand_words} exceeds its nominal quota {fmt(n)}, so it first gets its quota, {fmt(n)}"
            self._add(f"{self.names[t.idx]}: {why}.", "nominal", t.name, d)
        if idle:
            self._add(f"No quota and no demand here: {', '.join(self.names[i] for i in idle)}.", "nominal")
        self._idle = set(idle)

    def pool(self, cohort: CohortBook, members, pool, drawn, given, demand, wants) -> None:
        f, r = self._cell
        lent = {t.idx: t.lendable[f][r] for t in members if t.nominal[f][r] > EPS}  # teams with quota here

        def held_back(i):
            t = next(m for m in members if m.idx == i)
            if t.lendable[f][r] >= t.nominal[f][r] - EPS:
                return ""
            if t.team.cohort is None or t.team.sharing == "DontLend":
                return " (it does not lend)"
            return f" (its lending limit keeps {fmt(t.nominal[f][r] - t.lendable[f][r])} back)"

        uncovered = pool - sum(lent.values())
        lenders = f"what its teams lend ({self._list(lent, held_back)})" if lent else "nothing from its teams' quota"
        text = f"The cohort “{cohort.name}” pools {fmt(pool)} {self.unit} of {self.instance_type}: {lenders}"
        if uncovered > EPS:
            text += f" plus {fmt(uncovered)} of capacity that no team's quota covers"
        self._add(text + ".", "pool")
        self._add(
            f"Of that pool, {fmt(drawn)} is lendable quota the teams use themselves (counted in their nominal parts "
            f"above), which leaves {fmt(max(pool - drawn, 0.0))} spare to share.",
            "pool",
        )
        for t in members:
            if t.idx not in self._idle:
                self._add(self._cap_line(t, demand[t.idx][f][r], given[t.idx], wants.get(t.idx, 0.0)), "cap", t.name)

    def _cap_line(self, t: TeamBook, demand: float, given: float, want: float) -> str:
        f, r = self._cell
        if not t.may_borrow:
            return f"{self.names[t.idx]} may not borrow (sharing: {t.team.sharing}), so it stays at {fmt(given)}."
        limit = t.limit[f][r]
        borrow = t.borrow_limit[f][r]
        if borrow == INF:
            limit_words = "no borrow limit"
        elif borrow <= EPS:
            limit_words = "a borrow limit of 0"
        else:
            limit_words = f"a borrow limit of {fmt(borrow)}, so at most {fmt(limit)} in all"
        if want <= EPS:
            if demand <= given + EPS:
                return f"{self.names[t.idx]} wants no more: its demand {fmt(demand)} is met."
            return f"{self.names[t.idx]} wants more, but {limit_words} lets it take nothing beyond {fmt(given)}."
        cap = "its demand" if demand <= limit + EPS else "its borrow limit"
        return (
            f"{self.names[t.idx]} wants {fmt(want)} more, capped by {cap}: demand {fmt(demand)}, {limit_words}, "
            f"weight {fmt(t.weight)}."
        )

    def alone(self, members) -> None:
        names = ", ".join(self.names[t.idx] for t in members)
        self._add(f"{names} shares with no cohort: its fair share is its nominal quota up to its demand.", "alone")

    def phase(self, positive: bool, remaining: float, takers: dict[int, float]) -> None:
        self._round = 0
        if not takers:
            return
        who = ", ".join(f"{self.names[i]} (weight {fmt(w)})" for i, w in takers.items())
        if positive:
            self._add(f"The {fmt(remaining)} spare is split in proportion to weight among {who}:", "round")
        else:
            self._add(
                f"Teams of weight 0 share what the others leave, {fmt(remaining)}, equally: "
                f"{', '.join(self.names[i] for i in takers)}.",
                "round",
            )

    def sated_round(self, remaining, takers, total_weight, sated: dict[int, float]) -> None:
        self._round += 1
        offers = ", ".join(f"{self.names[i]} {fmt(remaining * w / total_weight)}" for i, w in takers.items())
        capped = ", ".join(f"{self.names[i]} takes only the {fmt(want)} it wants" for i, want in sated.items())
        left = remaining - sum(sated.values())
        self._add(
            f"Round {self._round}: {fmt(remaining)} by weight would give {offers}; {capped} (its cap); "
            f"{fmt(max(left, 0.0))} goes round again.",
            "round",
        )

    def split_round(self, remaining, takers, total_weight, wants) -> None:
        self._round += 1
        parts = ", ".join(f"{self.names[i]} +{fmt(remaining * w / total_weight)}" for i, w in takers.items())
        self._add(
            f"Round {self._round}: nobody left is capped, so all {fmt(remaining)} is split by weight: {parts}.",
            "round",
        )

    def left(self, positive: bool, remaining: float) -> None:
        if remaining > EPS and not positive:
            self._add(f"{fmt(remaining)} stays unclaimed: every team's demand or borrow limit is met.", "left")

    def result(self, members, given) -> None:
        for t in members:
            amount = given[t.idx]
            self._add(
                f"Fair share of {self.names[t.idx]} on {self.instance_type}: {fmt(amount)} {self.unit}.",
                "result",
                t.name,
                amount,
            )

    # --- reading -----------------------------------------------------------------------------------------

    def for_team(self, name: str) -> list[Line]:
        """Every step, with the other teams' result lines left out: the last line is `name`'s figure."""
        return [line for line in self.lines if line.kind != "result" or line.team == name]

    def value(self, name: str) -> float:
        return self.for_team(name)[-1].value


class FairShareTrace:
    """Collects one CellNote per instance type and resource while fair_shares() runs."""

    def __init__(self, names: dict[int, str]):
        self.names = names
        self.cells: dict[tuple[str, str], CellNote] = {}

    def cell(self, book: QuotaBook, f: int, r: int) -> CellNote:
        note = CellNote(book.flavors[f], book.resources[r], self.names, (f, r))
        self.cells[(note.instance_type, note.resource)] = note
        return note


def trace_fair_share(s: Scheduler, team_name: str, shown_as: dict[str, str] | None = None) -> FairShareTrace:
    """Run the engine's fair-share computation for `team_name`'s cohort on the scheduler's current state,
    with a trace. Demand is gathered exactly as Scheduler.fair_share() gathers it (usage plus pending).
    `shown_as` renames teams in the text (e.g. teams the reader may not see); lines keep the real `team`."""
    team = next(t for t in s.teams if t.name == team_name)
    members = team.book.cohort.members if team.book.cohort is not None else [team.book]
    demand = {member.idx: s._demand_row(s.teams[member.idx]) for member in members}
    shown_as = shown_as or {}
    trace = FairShareTrace({m.idx: shown_as.get(m.name, m.name) for m in members})
    fair_shares(s.book, members, demand, trace)
    return trace
