"""Selectors for where every team stands now: quota, usage, borrowed, lent, fair share, pending."""

from collections import Counter
from dataclasses import dataclass, field, replace

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
    """Per team name. Usage, borrowed and lent are what runs now (the engine settles the snapshot's running
    jobs alone, so it decides nothing new); fair share and pending take the queued demand into account.
    One snapshot serves both views."""
    now = now or timezone.now()
    snapshot = build_snapshot(now=now)
    running_only = replace(snapshot, workloads=[w for w in snapshot.workloads if w.running_on])
    running = engine.decide(running_only).teams
    demand = engine.decide(snapshot).teams
    pending = Counter(w.team for w in snapshot.workloads if not w.running_on)
    out = {}
    for name, status in running.items():
        wanted = demand.get(name, status)
        out[name] = TeamStanding(
            quota=status.quota,
            borrowing_limit=status.borrowing_limit,
            usage=status.usage,
            borrowed=status.borrowed,
            lent=status.lent,
            fair_share=wanted.fair_share,
            pending=pending[name],
            borrowable=status.borrowable,
        )
    return out


def totals(per_type: dict) -> dict[str, float]:
    """Sum a [instance_type][resource] mapping over instance types."""
    out: dict[str, float] = {}
    for resources in per_type.values():
        for resource, value in resources.items():
            out[resource] = out.get(resource, 0) + value
    return out
