"""The whole configuration as a YAML document: export it, plan the differences to a file, apply them.

Sections (each a list keyed by name, except cluster_policy): instance_types, node_groups, priority_classes,
teams (with members by username and allocations per instance type name), cluster_policy. A section the
file leaves out is left alone; a section it has is the whole truth (objects missing from it are deleted).
Applying runs every write through quotas.services in one transaction: all of it, or nothing.
"""

from contextlib import contextmanager
from dataclasses import dataclass, field

import yaml
from django.core.exceptions import ValidationError
from django.db import transaction

from quotas import history, services
from quotas.models import (
    ClusterPolicy,
    ComputeAllocation,
    InstanceType,
    NodeGroup,
    PriorityClass,
    Team,
)

INSTANCE_TYPE_DEFAULTS = {
    "family": "",
    "accelerator_kind": "",
    "accelerator_resource": "",
    "accelerators": 0,
    "efa_interfaces": 0,
}
INSTANCE_TYPE_REQUIRED = ["name", "vcpus", "memory_gib"]
NODE_GROUP_REQUIRED = ["name", "instance_type", "node_count"]
PRIORITY_CLASS_DEFAULTS = {"description": ""}
TEAM_DEFAULTS = {
    "description": "",
    "cohort": "default",
    "fair_share_weight": 1.0,
    "sharing": "LendAndBorrow",
    "borrow_limit_pct": None,
    "preempt_team_tasks": "Never",
    "members": [],
    "allocations": {},
}
TEAM_REQUIRED = ["name", "namespace"]
POLICY_DEFAULTS = {"task_prioritization": "fcfs", "idle_compute": "fair-share", "backfill": "reserve"}
SECTIONS = ["instance_types", "node_groups", "priority_classes", "teams", "cluster_policy"]


class ConfigError(Exception):
    """A file that cannot be applied; the message is one line."""


# --- export -------------------------------------------------------------------------------------------


def _allocation_fields(alloc: ComputeAllocation) -> dict:
    return {f: getattr(alloc, f) for f in history.ALLOCATION_FIELDS if getattr(alloc, f) is not None}


def export_config() -> dict:
    teams = Team.objects.prefetch_related("members", "allocations__instance_type").order_by("name")
    return {
        "instance_types": [
            {f: getattr(it, f) for f in services.INSTANCE_TYPE_FIELDS} for it in InstanceType.objects.order_by("name")
        ],
        "node_groups": [
            {"name": ng.name, "instance_type": ng.instance_type.name, "node_count": ng.node_count}
            for ng in NodeGroup.objects.select_related("instance_type").order_by("name")
        ],
        "priority_classes": [
            {"name": pc.name, "weight": pc.weight, "description": pc.description}
            for pc in PriorityClass.objects.order_by("-weight", "name")
        ],
        "teams": [
            {
                **{f: getattr(t, f) for f in services.TEAM_POLICY_FIELDS},
                "members": sorted(u.username for u in t.members.all()),
                "allocations": {
                    a.instance_type.name: _allocation_fields(a)
                    for a in sorted(t.allocations.all(), key=lambda a: a.instance_type.name)
                },
            }
            for t in teams
        ],
        "cluster_policy": history.cluster_snapshot(ClusterPolicy.load()),
    }


def export_yaml() -> str:
    return yaml.safe_dump(export_config(), sort_keys=False, allow_unicode=True)


# --- parsing ------------------------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _entries(doc: dict, section: str, required: list[str], defaults: dict, optional=()) -> dict[str, dict] | None:
    if section not in doc:
        return None
    items = doc[section] or []
    if not isinstance(items, list):
        raise ConfigError(f"{section}: expected a list")
    allowed = set(required) | set(defaults) | set(optional)
    out = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConfigError(f"{section}[{i}]: expected a mapping")
        missing = [k for k in required if k not in item]
        if missing:
            raise ConfigError(f"{section}[{i}]: missing {', '.join(missing)}")
        unknown = sorted(set(item) - allowed)
        if unknown:
            raise ConfigError(f"{section}[{i}] ({item.get('name')}): unknown key(s) {', '.join(unknown)}")
        name = str(item["name"])
        if name in out:
            raise ConfigError(f"{section}: {name} appears twice")
        out[name] = {**defaults, **item}
    return out


def parse(text: str) -> dict:
    """YAML text -> {section: {name: fields}} (cluster_policy: fields); ConfigError on a malformed file."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {_one_line(exc)}") from None
    if not isinstance(doc, dict):
        raise ConfigError("expected a mapping with sections " + ", ".join(SECTIONS))
    unknown = sorted(set(doc) - set(SECTIONS))
    if unknown:
        raise ConfigError(f"unknown section(s): {', '.join(unknown)}")
    teams = _entries(doc, "teams", TEAM_REQUIRED, TEAM_DEFAULTS)
    for name, team in (teams or {}).items():
        if not isinstance(team["members"] or [], list):
            raise ConfigError(f"teams: {name}: members must be a list of usernames")
        if not isinstance(team["allocations"] or {}, dict):
            raise ConfigError(f"teams: {name}: allocations must map instance type names to amounts")
        for type_name, amounts in (team["allocations"] or {}).items():
            if not isinstance(amounts, dict):
                raise ConfigError(f"teams: {name}: allocation on {type_name} must be a mapping")
            bad = sorted(set(amounts) - set(history.ALLOCATION_FIELDS))
            if bad:
                raise ConfigError(f"teams: {name}: {type_name}: unknown key(s) {', '.join(bad)}")
    policy = None
    if "cluster_policy" in doc:
        policy = doc["cluster_policy"] or {}
        if not isinstance(policy, dict) or set(policy) - set(POLICY_DEFAULTS):
            raise ConfigError("cluster_policy: expected task_prioritization, idle_compute and backfill")
        policy = {**POLICY_DEFAULTS, **policy}
    return {
        "instance_types": _entries(doc, "instance_types", INSTANCE_TYPE_REQUIRED, INSTANCE_TYPE_DEFAULTS),
        "node_groups": _entries(doc, "node_groups", NODE_GROUP_REQUIRED, {}),
        "priority_classes": _entries(doc, "priority_classes", ["name", "weight"], PRIORITY_CLASS_DEFAULTS),
        "teams": teams,
        "cluster_policy": policy,
    }


# --- plan ---------------------------------------------------------------------------------------------


@dataclass
class Change:
    kind: str
    name: str
    action: str  # "create" | "change" | "delete"
    details: list[str] = field(default_factory=list)

    def line(self) -> str:
        sign = {"create": "+", "change": "~", "delete": "-"}[self.action]
        text = f"{sign} {self.kind} {self.name}"
        return text + (": " + "; ".join(self.details) if self.details else "")


@dataclass
class Plan:
    changes: list[Change] = field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(1 for c in self.changes if c.action == action)

    def summary(self) -> str:
        if not self.changes:
            return "No changes: the cluster already matches the file."
        counts = [f"{self.count(a)} to {a}" for a in ("create", "change", "delete")]
        return "Plan: " + ", ".join(counts) + "."

    def lines(self) -> list[str]:
        return [c.line() for c in self.changes] + [self.summary()]


def _shown(value) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    return history.number(value) if isinstance(value, int | float) else repr(value)


def _field_diffs(current: dict, desired: dict, fields) -> list[str]:
    return [
        f"{f}: {_shown(current.get(f))} → {_shown(desired.get(f))}" for f in fields if current.get(f) != desired.get(f)
    ]


def _team_snapshot(entry: dict, types: dict[str, InstanceType]) -> dict:
    snap = {f: entry.get(f) for f in services.TEAM_POLICY_FIELDS}
    snap["members"] = sorted(str(m) for m in entry.get("members") or [])
    allocations = {}
    for type_name, amounts in sorted((entry.get("allocations") or {}).items()):
        it = types.get(type_name)
        values = {f: (amounts or {}).get(f) for f in history.ALLOCATION_FIELDS}
        resolved = {}
        if it is not None:
            try:
                resolved = ComputeAllocation(instance_type=it, **values).resolved()
            except (TypeError, ValueError):
                resolved = {}
        allocations[type_name] = {
            **values,
            "accelerator_resource": it.accelerator_key if it else "",
            "resolved": resolved,
        }
    snap["allocations"] = allocations
    return snap


def make_plan(desired: dict) -> Plan:
    current = export_config()
    plan = Plan()
    simple = [
        ("instance_types", "instance type", services.INSTANCE_TYPE_FIELDS),
        ("node_groups", "node group", services.NODE_GROUP_FIELDS),
        ("priority_classes", "priority class", services.PRIORITY_CLASS_FIELDS),
    ]
    for section, kind, fields in simple:
        wanted = desired.get(section)
        if wanted is None:
            continue
        have = {e["name"]: e for e in current[section]}
        for name, entry in wanted.items():
            if name not in have:
                plan.changes.append(Change(kind, name, "create"))
            elif diffs := _field_diffs(have[name], entry, fields):
                plan.changes.append(Change(kind, name, "change", diffs))
        plan.changes += [Change(kind, name, "delete") for name in have if name not in wanted]
    # Instance types as they will be after the apply, for the teams' resolved defaults.
    types = {it.name: it for it in InstanceType.objects.all()}
    for name, entry in (desired.get("instance_types") or {}).items():
        types[name] = InstanceType(**{f: entry.get(f) for f in services.INSTANCE_TYPE_FIELDS})
    if desired.get("teams") is not None:
        have = {t["name"]: t for t in current["teams"]}
        for name, entry in desired["teams"].items():
            if name not in have:
                plan.changes.append(Change("team", name, "create"))
                continue
            before = _team_snapshot(have[name], types)
            after = _team_snapshot(entry, types)
            if diffs := history.team_changes(before, after):
                plan.changes.append(Change("team", name, "change", diffs))
        plan.changes += [Change("team", name, "delete") for name in have if name not in desired["teams"]]
    if desired.get("cluster_policy") is not None:
        diffs = history.cluster_changes(current["cluster_policy"], desired["cluster_policy"])
        if diffs:
            plan.changes.append(Change("cluster policy", "", "change", diffs))
    return plan


# --- apply --------------------------------------------------------------------------------------------


class _DryRun(Exception):
    pass


@contextmanager
def _about(kind: str, name: str):
    try:
        yield
    except ValidationError as exc:
        raise ConfigError(f"{kind} {name}: {_error_line(exc)}".replace(" : ", ": ")) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{kind} {name}: {_one_line(exc)}") from None


def _apply(desired: dict, plan: Plan, *, user, reason: str) -> None:
    actions = {(c.kind, c.name): c.action for c in plan.changes}

    def wanted(kind, name):
        return actions.get((kind, name))

    for name, entry in (desired.get("instance_types") or {}).items():
        if wanted("instance type", name):
            fields = {f: entry.get(f) for f in services.INSTANCE_TYPE_FIELDS}
            with _about("instance type", name):
                services.instance_type_save(instance_type=InstanceType.objects.filter(name=name).first(), **fields)
    for name, entry in (desired.get("node_groups") or {}).items():
        if wanted("node group", name):
            fields = {f: entry[f] for f in services.NODE_GROUP_FIELDS}
            with _about("node group", name):
                services.node_group_save(node_group=NodeGroup.objects.filter(name=name).first(), **fields)
    for name, entry in (desired.get("priority_classes") or {}).items():
        if wanted("priority class", name):
            fields = {f: entry.get(f) for f in services.PRIORITY_CLASS_FIELDS}
            with _about("priority class", name):
                services.priority_class_save(priority_class=PriorityClass.objects.filter(name=name).first(), **fields)
    for name, entry in (desired.get("teams") or {}).items():
        action = wanted("team", name)
        fields = {f: entry.get(f) for f in services.TEAM_POLICY_FIELDS}
        members = entry.get("members") or []
        allocations = entry.get("allocations") or {}
        with _about("team", name):
            if action == "create":
                services.team_create(user=user, members=members, allocations=allocations, reason=reason, **fields)
            elif action == "change":
                team = Team.objects.get(name=name)
                services.team_configure(
                    team=team, user=user, fields=fields, members=members, allocations=allocations, reason=reason
                )
    for change in plan.changes:
        if change.action != "delete":
            continue
        if change.kind == "team":
            with _about("team", change.name):
                services.team_delete(team=Team.objects.get(name=change.name), user=user)
    for change in plan.changes:
        if change.action == "delete" and change.kind == "node group":
            with _about("node group", change.name):
                services.node_group_delete(node_group=NodeGroup.objects.get(name=change.name))
        elif change.action == "delete" and change.kind == "priority class":
            with _about("priority class", change.name):
                services.priority_class_delete(priority_class=PriorityClass.objects.get(name=change.name))
    for change in plan.changes:
        if change.action == "delete" and change.kind == "instance type":
            with _about("instance type", change.name):
                services.instance_type_delete(instance_type=InstanceType.objects.get(name=change.name))
    if wanted("cluster policy", ""):
        with _about("cluster policy", ""):
            services.cluster_policy_update(user=user, reason=reason, **desired["cluster_policy"])


def _error_line(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        parts = [f"{k}: {' '.join(v)}" if k != "__all__" else " ".join(v) for k, v in exc.message_dict.items()]
    else:
        parts = exc.messages
    return _one_line("; ".join(parts))


@contextmanager
def trial(text: str, *, user=None, reason: str = "what-if"):
    """Apply the file inside a transaction that is always rolled back, and yield its plan while the database
    looks as it will after the apply: readers (a what-if replay) see the draft through the ordinary models
    and selectors. Every write runs through the same services as apply(), so it finds the same errors."""
    desired = parse(text)
    plan = make_plan(desired)
    try:
        with transaction.atomic():
            try:
                _apply(desired, plan, user=user, reason=reason)
            except ValidationError as exc:
                raise ConfigError(_error_line(exc)) from None
            except (TypeError, ValueError) as exc:
                raise ConfigError(_one_line(exc)) from None
            yield plan
            raise _DryRun
    except _DryRun:
        pass


def apply(text: str, *, dry_run: bool = False, user=None, reason: str = "applied from cluster.yaml") -> Plan:
    """Plan the file against the database and (unless dry_run) apply it atomically. A dry run also runs
    every write, so it finds the same errors, then rolls back."""
    desired = parse(text)
    plan = make_plan(desired)
    try:
        with transaction.atomic():
            _apply(desired, plan, user=user, reason=reason)
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    except ValidationError as exc:
        raise ConfigError(_error_line(exc)) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(_one_line(exc)) from None
    return plan
