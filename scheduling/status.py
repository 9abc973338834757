"""Selectors for where every team stands now: quota, usage, borrowed, lent, fair share, pending."""

from collections import Counter
from dataclasses import dataclass, field

from django.utils import timezone

from scheduling import engine
from scheduling.snapshot import build_snapshot


@dataclass
class TeamStanding:
    quota: dict = field(default_factory=dict)
    borrowing_limit: dict | None = None
    usage: dict = field(default_factory=dict)
    borrowed: dict = field(default_factory=dict)
    lent: dict = field(default_factory=dict)
    fair_share: dict = field(default_factory=dict)
    pending: int = 0
    borrowable: dict = field(default_factory=dict)


def team_statuses(*, now=None) -> dict[str, TeamStanding]:
    """Per team name. Usage, borrowed and lent are what runs now; fair share and pending take the queued
    demand into account. The engine reads one snapshot as it stands and decides nothing (no settle)."""
    now = now or timezone.now()
    snapshot = build_snapshot(now=now)
    pending = Counter(w.team for w in snapshot.workloads if not w.running_on)
    out = {}
    for name, status in engine.standing(snapshot).teams.items():
        out[name] = TeamStanding(
            quota=status.quota,
            borrowing_limit=status.borrowing_limit,
            usage=status.usage,
            borrowed=status.borrowed,
            lent=status.lent,
            fair_share=status.fair_share,
            pending=pending[name],
            borrowable=status.borrowable,
        )
    return out


def page_team_statuses(names: list[str] | None = None) -> dict[str, TeamStanding]:
    """What the pages show: the standing the scheduler published (scheduling/published.py) for the teams
    named (all by default), or, where none is current, the engine's standing now, published for the next."""
    from scheduling import published

    found = published.team_statuses(names)
    if found is None:
        found = {name: vars(status) for name, status in published.page_standing().teams.items()}
    return {
        name: TeamStanding(**{f: values[f] for f in published.TEAM_FIELDS})
        for name, values in found.items()
        if names is None or name in names
    }


def totals(per_type: dict) -> dict[str, float]:
    """Sum a [instance_type][resource] mapping over instance types."""
    out: dict[str, float] = {}
    for resources in per_type.values():
        for resource, value in resources.items():
            out[resource] = out.get(resource, 0) + value
    return out
