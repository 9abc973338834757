"""Configuration snapshots and the readable differences between two of them (pure functions on dicts).

A team's snapshot holds its policy fields, its members and its allocations (what was set, and the resolved
quota, so a diff can say "default (2048)"); the cluster's holds the cluster policy. Snapshots are JSON.
"""

from quotas.models import Backfill, ClusterPolicy, IdleCompute, PreemptTeamTasks, Sharing, TaskPrioritization, Team

TEAM_FIELDS = [
    # field, label, choices (for readable values) or None
    ("name", "name", None),
    ("namespace", "namespace", None),
    ("description", "description", None),
    ("cohort", "cohort", None),
    ("fair_share_weight", "fair-share weight", None),
    ("sharing", "sharing", Sharing),
    ("borrow_limit_pct", "borrow limit", None),
    ("preempt_team_tasks", "preempt own lower-priority tasks", PreemptTeamTasks),
]
CLUSTER_FIELDS = [
    ("task_prioritization", "task prioritization", TaskPrioritization),
    ("idle_compute", "idle compute", IdleCompute),
    ("backfill", "backfill", Backfill),
]
ALLOCATION_FIELDS = ["instances", "accelerators", "vcpus", "memory_gib"]
ACCELERATOR_LABELS = {"gpu": "GPUs", "neuron": "Neuron devices", "": "accelerators"}
RESOURCE_OF_FIELD = {"vcpus": "cpu", "memory_gib": "memory"}


def number(value) -> str:
    """48.0 -> '48', 1024.5 -> '1024.5', None -> '—'."""
    if value is None:
        return "—"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return str(value)


def allocation_entry(alloc) -> dict:
    it = alloc.instance_type
    entry = {field: getattr(alloc, field) for field in ALLOCATION_FIELDS}
    entry["accelerator_resource"] = it.accelerator_key
    entry["resolved"] = {k: float(v) for k, v in alloc.resolved().items()}
    return entry


def team_snapshot(team: Team) -> dict:
    snap = {field: getattr(team, field) for field, _, _ in TEAM_FIELDS}
    snap["members"] = sorted(team.members.values_list("username", flat=True))
    allocations = team.allocations.select_related("instance_type").order_by("instance_type__name")
    snap["allocations"] = {a.instance_type.name: allocation_entry(a) for a in allocations}
    return snap


def cluster_snapshot(policy: ClusterPolicy) -> dict:
    return {field: getattr(policy, field) for field, _, _ in CLUSTER_FIELDS}


def _readable(value, choices) -> str:
    if value is None or value == "":
        return "—"
    if choices is not None:
        try:
            return str(choices(value).label)
        except ValueError:
            return str(value)
    return number(value) if isinstance(value, int | float) else str(value)


def _field_changes(before: dict, after: dict, fields) -> list[str]:
    out = []
    for field, label, choices in fields:
        old, new = before.get(field), after.get(field)
        if old == new:
            continue
        if field == "borrow_limit_pct":
            old_s = "no cap" if old is None else f"{number(old)} %"
            new_s = "no cap" if new is None else f"{number(new)} %"
        else:
            old_s, new_s = _readable(old, choices), _readable(new, choices)
        out.append(f"{label}: {old_s} → {new_s}")
    return out


def _resource_label(field: str, entry: dict) -> str:
    if field == "accelerators":
        return ACCELERATOR_LABELS.get(entry.get("accelerator_resource", ""), "accelerators")
    return {"instances": "instances", "vcpus": "vCPUs", "memory_gib": "memory"}[field]


def _alloc_value(field: str, entry: dict, *, unit: bool) -> str:
    value = entry.get(field)
    if value is None:
        if field == "instances" or entry.get("instances") is not None:
            return "—" if field == "instances" else "from instances"
        resource = RESOURCE_OF_FIELD.get(field) or entry.get("accelerator_resource") or ""
        resolved = entry.get("resolved", {}).get(resource)
        return f"default ({number(resolved)})" if resolved is not None else "default"
    suffix = " GiB" if unit and field == "memory_gib" else ""
    return f"{number(value)}{suffix}"


def describe(entry: dict) -> str:
    if entry.get("instances") is not None:
        return f"{number(entry['instances'])} instances"
    parts = [
        f"{_resource_label(f, entry)} {_alloc_value(f, entry, unit=True)}"
        for f in ("accelerators", "vcpus", "memory_gib")
        if entry.get(f) is not None
    ]
    return ", ".join(parts) or "nothing set"


def allocation_changes(before: dict, after: dict) -> list[str]:
    """'ml.p5.48xlarge GPUs: 8 → 16; memory: default (2048) → 1024 GiB', one line per instance type."""
    out = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old is None:
            out.append(f"{name}: added ({describe(new)})")
        elif new is None:
            out.append(f"{name}: removed (was {describe(old)})")
        else:
            parts = []
            for field in ALLOCATION_FIELDS:
                if old.get(field) == new.get(field):
                    continue
                label = _resource_label(field, new)
                parts.append(f"{label}: {_alloc_value(field, old, unit=True)} → {_alloc_value(field, new, unit=True)}")
            if parts:
                out.append(f"{name} " + "; ".join(parts))
    return out


def member_changes(before: list, after: list) -> list[str]:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    parts = [f"+{u}" for u in added] + [f"−{u}" for u in removed]
    return [f"members: {', '.join(parts)}"] if parts else []


def team_changes(before: dict | None, after: dict) -> list[str]:
    if before is None:
        return ["created"]
    return (
        _field_changes(before, after, TEAM_FIELDS)
        + member_changes(before.get("members", []), after.get("members", []))
        + allocation_changes(before.get("allocations", {}), after.get("allocations", {}))
    )


def cluster_changes(before: dict | None, after: dict) -> list[str]:
    if before is None:
        return ["created"]
    return _field_changes(before, after, CLUSTER_FIELDS)
