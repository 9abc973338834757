"""Selectors for where every team stands now: quota, usage, borrowed, lent, fair share, pending."""

from dataclasses import dataclass, field

from django.db.models import Count
from django.utils import timezone

from scheduling import engine
from scheduling.models import QUEUED_STATES, Job
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


def team_statuses(*, now=None) -> dict[str, TeamStanding]:
    """Per team name. Usage, borrowed and lent are what runs now (the engine settles a snapshot of only the
    running jobs, so it decides nothing new); fair share and pending take the queued demand into account."""
    now = now or timezone.now()
    running = engine.decide(build_snapshot(now=now, include_queued=False)).teams
    demand = engine.decide(build_snapshot(now=now)).teams
    pending = dict(
        Job.objects.filter(state__in=QUEUED_STATES).values_list("team__name").annotate(n=Count("id")).order_by()
    )
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
            pending=pending.get(name, 0),
        )
    return out


def totals(per_type: dict) -> dict[str, float]:
    """Sum a [instance_type][resource] mapping over instance types."""
    out: dict[str, float] = {}
    for resources in per_type.values():
        for resource, value in resources.items():
            out[resource] = out.get(resource, 0) + value
    return out
