"""Reads for the quota pages and API: inventory with allocated totals, team standings, allocation rows."""

from collections import defaultdict
from functools import cached_property

from django.db.models import Count, Sum

from quotas.models import ComputeAllocation, ConfigVersion, InstanceType, NodeGroup, Team

RESOURCE_LABELS = {"gpu": "GPU", "neuron": "Neuron", "cpu": "vCPU", "memory": "GiB"}
RESOURCE_ORDER = ["gpu", "neuron", "cpu", "memory"]


def instance_types_with_nodes():
    return InstanceType.objects.annotate(nodes=Sum("node_groups__node_count")).order_by("name")


def allocated_by_type(*, exclude_team=None) -> dict[int, dict[str, float]]:
    """Sum of every team's resolved quota, per instance type id and resource."""
    out: dict[int, dict[str, float]] = defaultdict(dict)
    allocations = ComputeAllocation.objects.select_related("instance_type")
    if exclude_team is not None:
        allocations = allocations.exclude(team=exclude_team)
    for alloc in allocations:
        row = out[alloc.instance_type_id]
        for resource, value in alloc.resolved().items():
            row[resource] = row.get(resource, 0) + value
    return out


def capacity_row(it: InstanceType, nodes: int, allocated: dict[str, float]) -> dict:
    """One instance type: capacity, allocated and, per resource, whether quota exceeds capacity."""
    capacity = {k: v * nodes for k, v in it.capacity().items()}
    resources = []
    for resource in RESOURCE_ORDER:
        if resource not in capacity:
            continue
        cap, used = capacity[resource], allocated.get(resource, 0)
        resources.append(
            {
                "resource": resource,
                "label": RESOURCE_LABELS[resource],
                "capacity": cap,
                "allocated": used,
                "over": used > cap + 1e-9,
                "pct": round(100 * used / cap) if cap else (100 if used else 0),
            }
        )
    over = [r for r in resources if r["over"]]
    return {
        "instance_type": it,
        "nodes": nodes,
        "capacity": capacity,
        "resources": resources,
        "warning": (
            f"Quota exceeds capacity on {it.name}: "
            + ", ".join(f"{r['label']} {r['allocated']:g} allocated of {r['capacity']:g}" for r in over)
            + ". Teams cannot all use their full quota at once."
        )
        if over
        else "",
    }


def cluster_inventory() -> dict:
    allocated = allocated_by_type()
    rows = [capacity_row(it, it.nodes or 0, allocated.get(it.pk, {})) for it in instance_types_with_nodes()]
    return {
        "rows": rows,
        "node_groups": NodeGroup.objects.select_related("instance_type"),
        "versions": inventory_versions()[:10],
        "warnings": [r["warning"] for r in rows if r["warning"]],
    }


def _accelerator_totals(per_type: dict, kinds: dict[str, str]) -> dict[str, float]:
    """{instance_type: {resource: v}} -> totals per resource, all instance types together."""
    out: dict[str, float] = {}
    for resources in (per_type or {}).values():
        for resource, value in resources.items():
            out[resource] = out.get(resource, 0) + value
    return out


def headline(totals: dict[str, float]) -> list[tuple[str, float]]:
    """What to show at a glance: accelerators if the team has any quota in them, else vCPUs."""
    accel = [(RESOURCE_LABELS[r], totals[r]) for r in ("gpu", "neuron") if r in totals]
    return accel or ([("vCPU", totals["cpu"])] if "cpu" in totals else [])


def use_percentages(quota: dict[str, float], usage: dict[str, float]) -> list[dict]:
    """In use as % of quota, one entry per resource (GPUs and Neuron devices are never added together; vCPUs
    only for a team without accelerators). Without quota in a resource the percentage is None: what the team
    uses there is all borrowed, which no percentage of nothing describes."""
    resources = [r for r in ("gpu", "neuron") if quota.get(r) or usage.get(r)] or [
        r for r in ("cpu",) if quota.get(r) or usage.get(r)
    ]
    out = []
    for resource in resources:
        q, u = quota.get(resource, 0), usage.get(resource, 0)
        out.append(
            {
                "resource": resource,
                "label": RESOURCE_LABELS[resource],
                "used": u,
                "quota": q,
                "pct": round(100 * u / q) if q else None,
            }
        )
    return out


class TeamRow:
    """One team of the team list. Its figures are summed from its standing only when the row is shown or the
    list is sorted on them: a page of 50 out of 1,000 teams sums 50."""

    METRICS = ("quota", "usage", "borrowed", "lent", "fair_share")

    def __init__(self, team: Team, standing):
        self.team, self.standing = team, standing
        self.name, self.sharing, self.weight = team.name, team.sharing, team.fair_share_weight
        self.members = team.member_count
        self.pending = standing.pending if standing else 0

    @cached_property
    def totals(self) -> dict[str, dict[str, float]]:
        standing = self.standing
        return {m: _accelerator_totals(getattr(standing, m, {}) if standing else {}, {}) for m in self.METRICS}

    @cached_property
    def metrics(self) -> dict[str, list]:
        return {m: headline(totals) for m, totals in self.totals.items()}

    @cached_property
    def keys(self) -> dict[str, tuple]:
        """What the table sorts a figure by: accelerators (GPUs and Neuron devices), then vCPUs."""
        return {m: (t.get("gpu", 0) + t.get("neuron", 0), t.get("cpu", 0)) for m, t in self.totals.items()}

    @cached_property
    def use(self) -> list[dict]:
        return use_percentages(self.totals["quota"], self.totals["usage"])


def team_list(user) -> list[TeamRow]:
    """Teams the user may see, each with its member count and standing (quota, usage, borrowed, lent, fair
    share, pending) summed over instance types. The standing is the one the scheduler published
    (scheduling.status.page_team_statuses): a fixed number of queries for any team count."""
    from scheduling.status import page_team_statuses  # the engine's view; quotas must not import it at load time

    teams = list(Team.objects.visible_to(user).annotate(member_count=Count("members", distinct=True)).order_by("name"))
    statuses = page_team_statuses([team.name for team in teams])
    return [TeamRow(team, statuses.get(team.name)) for team in teams]


def team_standing(team: Team):
    from scheduling.status import page_team_statuses

    return page_team_statuses([team.name]).get(team.name)


def standing_table(standing, types: list[InstanceType]) -> list[dict]:
    """Per instance type and resource: quota, usage, borrowed, lent, fair share (for the team page)."""
    rows = []
    if standing is None:
        return rows
    names = sorted(set(standing.quota) | set(standing.usage) | set(standing.borrowed) | set(standing.lent))
    for name in names:
        for resource in RESOURCE_ORDER:
            values = {
                metric: (getattr(standing, metric) or {}).get(name, {}).get(resource)
                for metric in ("quota", "usage", "borrowed", "lent", "fair_share")
            }
            if all(not v for v in values.values()):
                continue
            limit = (standing.borrowing_limit or {}).get(name, {}).get(resource) if standing.borrowing_limit else None
            rows.append({"instance_type": name, "resource": RESOURCE_LABELS[resource], "limit": limit, **values})
    return rows


def team_versions(team: Team):
    return ConfigVersion.objects.filter(team=team).select_related("author", "reverted_from").order_by("-number")


def cluster_versions():
    return ConfigVersion.objects.filter(scope="cluster").select_related("author", "reverted_from").order_by("-number")


def inventory_versions():
    """Every change to instance types, node groups and priority classes (a record; not revertible)."""
    return ConfigVersion.objects.filter(scope="inventory").select_related("author").order_by("-number")
