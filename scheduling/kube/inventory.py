"""Observed node groups against the configured inventory: what applying them would change. Pure functions."""

from dataclasses import asdict

from scheduling.backends.base import InventoryItem

TYPE_FIELDS = ("accelerator_resource", "accelerators", "vcpus", "memory_gib")


def item_dict(item: InventoryItem) -> dict:
    return asdict(item)


def family_of(instance_type: str) -> str:
    """ml.p5.48xlarge -> p5; p4d.24xlarge -> p4d."""
    parts = instance_type.split(".")
    return (parts[1] if parts[0] == "ml" and len(parts) > 2 else parts[0])[:32]


def inventory_changes(items: list[dict], types: dict[str, dict], groups: dict[str, dict]) -> list[dict]:
    """Changes that make InstanceType/NodeGroup rows match the observed items.

    types: name -> {field: value}; groups: name -> {"instance_type": name, "node_count": n}.
    Each change: {"kind": "instance_type"|"node_group", "action": "add"|"change", "name", "fields": {f: [old, new]}}
    (plus "instance_type" for node groups and "accelerator_kind" for new instance types).
    """
    changes: list[dict] = []
    seen_types = set()
    for item in items:
        name = item["instance_type"]
        if name in seen_types:
            continue
        seen_types.add(name)
        new = {f: item[f] for f in TYPE_FIELDS}
        if name not in types:
            changes.append(
                {
                    "kind": "instance_type",
                    "action": "add",
                    "name": name,
                    "fields": {f: [None, v] for f, v in new.items()},
                    "accelerator_kind": (item.get("extra") or {}).get("accelerator_kind", ""),
                }
            )
            continue
        diff = {f: [types[name].get(f), v] for f, v in new.items() if types[name].get(f) != v}
        if diff:
            changes.append({"kind": "instance_type", "action": "change", "name": name, "fields": diff})

    unmatched = dict(groups)
    for item in items:
        group = (item.get("extra") or {}).get("node_group") or item["instance_type"]
        name = group if group in unmatched else None
        if name is None:  # the same nodes under another name: one configured group of that type not seen by name
            same_type = [g for g, row in unmatched.items() if row["instance_type"] == item["instance_type"]]
            name = same_type[0] if len(same_type) == 1 and group not in groups else None
        if name is None:
            changes.append(
                {
                    "kind": "node_group",
                    "action": "add",
                    "name": group,
                    "instance_type": item["instance_type"],
                    "fields": {"node_count": [None, item["node_count"]]},
                }
            )
            continue
        row = unmatched.pop(name)
        diff = {}
        if row["node_count"] != item["node_count"]:
            diff["node_count"] = [row["node_count"], item["node_count"]]
        if row["instance_type"] != item["instance_type"]:
            diff["instance_type"] = [row["instance_type"], item["instance_type"]]
        if diff:
            changes.append(
                {
                    "kind": "node_group",
                    "action": "change",
                    "name": name,
                    "instance_type": item["instance_type"],
                    "fields": diff,
                }
            )
    for name, row in sorted(unmatched.items()):
        if row["node_count"]:
            changes.append(
                {
                    "kind": "node_group",
                    "action": "change",
                    "name": name,
                    "instance_type": row["instance_type"],
                    "fields": {"node_count": [row["node_count"], 0]},
                    "note": "not seen in the cluster",
                }
            )
    return changes
