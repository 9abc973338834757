"""Right-sizing advice: the weekly reading of four weeks of hourly usage rollups, per team and instance type,
into quota proposals with their evidence. Each proposal carries a draft, so one click replays it.

Rules (accelerators; an hour counts where the rollup covers it):
- underused: in each of the four weeks, the 95th percentile of the hour's peak use is below half the quota.
  Proposal: quota down to that peak (the largest of the weekly p95s) plus a quarter, in whole accelerators.
- starved: in at least half the hours, the team used all its quota, had work waiting and borrowed as much as
  it may (its borrow limit, or nothing where its sharing does not borrow). Proposal: quota up by the median
  waiting demand in those hours, in whole accelerators.
- unallocated: the instance type has capacity no team's quota covers. Proposal: give it to the team that
  borrowed most there (up to its 95th-percentile borrowing), or, where nobody borrowed, remove the idle
  whole nodes from the inventory.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import timedelta

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from quotas import iac
from quotas.models import InstanceType, Team
from scheduling.usage.models import Granularity, UsageRollup
from scheduling.whatif import services
from scheduling.whatif.metrics import percentile
from scheduling.whatif.models import Advice, AdviceKind

WEEKS = 4
UNDERUSED_BELOW = 0.5  # of quota
STARVED_SHARE = 0.5  # of hours
MIN_COVERAGE = 0.5  # of the hours in a week must have a rollup to judge it
EPS = 1e-6


def _unit(it: InstanceType, amount: float) -> str:
    name = {"gpu": "GPU", "neuron": "Neuron device"}.get(it.accelerator_key, "accelerator")
    return name if amount == 1 else name + "s"


def _allocations_with(team: str, type_name: str, accelerators: int) -> dict:
    entry = next(t for t in iac.export_config()["teams"] if t["name"] == team)
    allocations = dict(entry["allocations"])
    allocations[type_name] = {"accelerators": accelerators}
    return services.draft_with_team(team_name=team, allocations=allocations)


def _hourly(since, until) -> dict[tuple[int, int], list]:
    rows = UsageRollup.objects.filter(granularity=Granularity.HOUR, bucket__gte=since, bucket__lt=until).values_list(
        "team_id",
        "instance_type_id",
        "bucket",
        "max_used_acc",
        "used_acc",
        "borrowed_acc",
        "pending_acc",
        "max_pending_acc",
        "quota_acc",
    )
    out = defaultdict(list)
    for team_id, type_id, *rest in rows:
        out[(team_id, type_id)].append(rest)
    return out


def _underused(team: Team, it: InstanceType, rows, since) -> Advice | None:
    quota = rows[-1][6]
    if quota < 1:
        return None
    weekly = []
    for week in range(WEEKS):
        start, end = since + timedelta(weeks=week), since + timedelta(weeks=week + 1)
        peaks = [r[1] for r in rows if start <= r[0] < end]
        if len(peaks) < MIN_COVERAGE * 168:
            return None
        weekly.append(percentile(peaks, 95))
    if max(weekly) >= UNDERUSED_BELOW * quota:
        return None
    proposed = max(1, math.ceil(max(weekly) * 1.25))
    if proposed >= quota:
        return None
    return Advice(
        kind=AdviceKind.UNDERUSED,
        team=team,
        instance_type=it,
        summary=f"{team.name}: {it.name} quota {quota:g} → {proposed} {_unit(it, proposed)} (mostly unused)",
        evidence=[
            f"week {i + 1}: 95th percentile of hourly peak use {p:.1f} of {quota:g} ({100 * p / quota:.0f} %)"
            for i, p in enumerate(weekly)
        ]
        + [
            f"below {100 * UNDERUSED_BELOW:.0f} % of quota in every one of the last {WEEKS} weeks",
            f"proposed: the highest weekly p95 ({max(weekly):.1f}) plus a quarter, rounded up",
        ],
        draft=_allocations_with(team.name, it.name, proposed),
    )


def _starved(team: Team, it: InstanceType, rows) -> Advice | None:
    quota = rows[-1][6]
    limit = 0.0
    if team.sharing == "LendAndBorrow" and team.cohort:
        limit = math.inf if team.borrow_limit_pct is None else quota * team.borrow_limit_pct / 100
    starved = [r for r in rows if r[2] >= quota - EPS and r[4] > EPS and r[3] >= limit - EPS]
    share = len(starved) / len(rows)
    if quota < 1 or limit == math.inf or share < STARVED_SHARE or len(rows) < MIN_COVERAGE * 168 * WEEKS:
        return None
    more = max(1, math.ceil(percentile([r[4] for r in starved], 50)))
    limit_words = "may not borrow" if limit == 0 else f"borrow limit {limit:g} ({team.borrow_limit_pct:g} % of quota)"
    return Advice(
        kind=AdviceKind.STARVED,
        team=team,
        instance_type=it,
        summary=f"{team.name}: {it.name} quota {quota:g} → {quota + more:g} {_unit(it, quota + more)} "
        "(always exhausted)",
        evidence=[
            f"{100 * share:.0f} % of {len(rows)} hours: all {quota:g} of its quota in use, work waiting, and "
            f"borrowing at its limit ({limit_words})",
            f"waiting demand in those hours: median {percentile([r[4] for r in starved], 50):.1f}, "
            f"95th percentile {percentile([r[5] for r in starved], 95):.1f} accelerators",
            f"proposed: quota plus the median waiting demand, rounded up (+{more})",
        ],
        draft=_allocations_with(team.name, it.name, int(quota + more)),
    )


def _unallocated(it: InstanceType, nodes: int, allocated: float, borrowers: dict[Team, list[float]]):
    capacity = it.accelerators * nodes
    free = capacity - allocated
    if it.accelerators < 1 or free < 1 - EPS:
        return None
    base = [
        f"{it.name}: {capacity:g} accelerators on {nodes} nodes, {allocated:g} under some team's quota, "
        f"{free:g} under none"
    ]
    if borrowers:
        team, borrowed = max(borrowers.items(), key=lambda kv: (sum(kv[1]), kv[0].name))
        p95 = percentile(borrowed, 95)
        give = min(int(free), max(1, math.ceil(p95)))
        current = next(
            (
                a["accelerators"] or 0
                for t in iac.export_config()["teams"]
                if t["name"] == team.name
                for name, a in t["allocations"].items()
                if name == it.name and a.get("accelerators") is not None
            ),
            0,
        )
        return Advice(
            kind=AdviceKind.UNALLOCATED,
            team=team,
            instance_type=it,
            summary=f"{team.name}: give it {give} of the {free:g} unallocated accelerators of {it.name}",
            evidence=base
            + [
                f"{team.name} borrowed there most: {sum(borrowed):.0f} accelerator-hours in "
                f"{WEEKS} weeks, 95th percentile {p95:.1f} at a time"
            ],
            draft=_allocations_with(team.name, it.name, int(current + give)),
        )
    idle_nodes = int(free // it.accelerators)
    if idle_nodes < 1:
        return None
    groups = [
        {"name": g["name"], "instance_type": g["instance_type"], "node_count": g["node_count"]}
        for g in iac.export_config()["node_groups"]
    ]
    left = idle_nodes
    for g in groups:
        if g["instance_type"] == it.name and left:
            cut = min(left, g["node_count"])
            g["node_count"] -= cut
            left -= cut
    return Advice(
        kind=AdviceKind.UNALLOCATED,
        team=None,
        instance_type=it,
        summary=f"{it.name}: {idle_nodes} node{'s' if idle_nodes != 1 else ''} nobody has quota for and nobody "
        f"borrowed: remove {'them' if idle_nodes != 1 else 'it'}",
        evidence=base + [f"no team borrowed on {it.name} in {WEEKS} weeks"],
        draft={"node_groups": groups},
    )


@transaction.atomic
def advise(*, now=None) -> list[Advice]:
    """One weekly run: read four weeks of hourly rollups and store this week's proposals."""
    now = now or timezone.now()
    until = now.replace(minute=0, second=0, microsecond=0)
    since = until - timedelta(weeks=WEEKS)
    hourly = _hourly(since, until)
    teams = {t.pk: t for t in Team.objects.all()}
    types = {it.pk: it for it in InstanceType.objects.annotate(nodes=Sum("node_groups__node_count"))}
    proposals = []
    borrowers: dict[int, dict[Team, list[float]]] = defaultdict(dict)
    for (team_id, type_id), rows in sorted(hourly.items()):
        team, it = teams.get(team_id), types.get(type_id)
        if team is None or it is None:
            continue
        rows.sort(key=lambda r: r[0])
        proposals += [a for a in (_underused(team, it, rows, since), _starved(team, it, rows)) if a]
        borrowed = [r[3] for r in rows if r[3] > EPS]
        if borrowed:
            borrowers[type_id][team] = borrowed
    from quotas.selectors import allocated_by_type

    allocated = allocated_by_type()
    for type_id, it in types.items():
        key = it.accelerator_key
        advice = _unallocated(it, it.nodes or 0, allocated.get(type_id, {}).get(key, 0.0), borrowers.get(type_id, {}))
        if advice:
            proposals.append(advice)
    for advice in proposals:
        advice.batch = until
    Advice.objects.filter(batch=until).delete()  # a rerun within the hour replaces its own proposals
    return Advice.objects.bulk_create(proposals)


def advice_replay(*, advice: Advice, user, window_days: int = 30):
    """The proposal's what-if replay (one click on the advice page)."""
    replay = services.replay_create(
        user=user, draft=advice.draft, window_days=window_days, title=f"advice: {advice.summary}"
    )
    advice.replay = replay
    advice.save(update_fields=["replay"])
    return replay
