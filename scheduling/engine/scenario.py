"""Reading a scenario (../shared/spec/scenario-format.md): JSON in, validated model out.

Every problem raises `ScenarioError` with one line naming where it is, e.g.
`workloads[3].requests.gpu: must be a non-negative number, got "two"`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from . import bounds
from .model import InstanceType, Policy, Team
from .quota import resolve_quota

FOR_PEOPLE = {"description", "source", "expect"}
SHARING = ("DontLend", "Lend", "LendAndBorrow")
TEAM_TASKS = ("Never", "LowerPriority")
RECLAIM = ("Never", "LowerPriority", "Any")
BORROW_WITHIN = ("Never", "LowerPriority")
MAX_NODES = bounds.MAX_NODES_PER_GROUP  # per instance type; nodes are tracked one by one
MAX_PODS = bounds.MAX_PODS_PER_JOB
BACKFILL = ("reserve", "none")
WITHIN_TEAM = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")


class ScenarioError(ValueError):
    """A malformed scenario; the message is one line that names the offending path. Control characters that
    came from the file (a key with a line break in it, say) are shown escaped, so the line stays one line."""

    def __init__(self, message: str):
        super().__init__("".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in message))


@dataclass
class WorkloadSpec:
    name: str
    team: str
    requests: dict[str, float]
    pods: int
    priority: int
    submit: float
    instance_type: str | None
    duration: float | None
    running_on: str | None
    since: float | None


@dataclass
class Scenario:
    instance_types: list[InstanceType]
    teams: list[Team]
    policy: Policy
    workloads: list[WorkloadSpec]
    until: float


def load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        return json.loads(text)
    except ValueError as err:
        raise ScenarioError(f"{path}: not valid JSON ({err})") from None


def show(value) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _object(value, path: str, allowed=(), required=()) -> dict:
    if not isinstance(value, dict):
        raise ScenarioError(f"{path}: must be an object, got {show(value)}")
    for key in value:
        if allowed and key not in allowed and key not in FOR_PEOPLE:
            raise ScenarioError(f"{path}.{key}: unknown key (expected one of {', '.join(allowed)})")
    for key in required:
        if key not in value:
            raise ScenarioError(f"{path}.{key}: missing")
    return value


def _list(value, path: str) -> list:
    if not isinstance(value, list):
        raise ScenarioError(f"{path}: must be a list, got {show(value)}")
    return value


def _number(value, path: str, minimum: float | None = 0.0, whole: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and whole and value != int(value):
        ok = False
    if ok and minimum is not None and value < minimum:
        ok = False
    if not ok:
        kind = "a whole number" if whole else "a number"
        if minimum == 0:
            kind = f"a non-negative {kind.split(' ', 1)[1]}" if not whole else "a whole number of at least 0"
        elif minimum is not None:
            kind = f"{kind} of at least {minimum:g}"
        raise ScenarioError(f"{path}: must be {kind}, got {show(value)}")
    return int(value) if whole else float(value)


def _at_most(value: int, limit: int, path: str) -> int:
    if value > limit:
        raise ScenarioError(f"{path}: must be at most {limit}, got {value}")
    return value


def _name(value, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ScenarioError(f"{path}: must be a non-empty string, got {show(value)}")
    return value


def _choice(value, path: str, options, nullable: bool = False):
    if value is None and nullable:
        return None
    if value not in options:
        raise ScenarioError(f"{path}: must be one of {', '.join(options)}, got {show(value)}")
    return value


def _amounts(value, path: str) -> dict[str, float]:
    _object(value, path)
    return {_name(r, f"{path} key"): _number(v, f"{path}.{r}") for r, v in value.items() if r not in FOR_PEOPLE}


def parse_scenario(data) -> Scenario:
    top = _object(data, "scenario", ("name", "cluster", "policy", "teams", "workloads", "until"), ("teams",))
    instance_types, cluster = _cluster(top.get("cluster"))
    policy, classes = _policy(top.get("policy"))
    teams = _teams(_list(top["teams"], "teams"), instance_types, cluster)
    for team in teams:
        for flavor in team.quota:
            instance_types.setdefault(flavor, InstanceType(flavor, {}, None))
    workloads = _workloads(_list(top.get("workloads", []), "workloads"), teams, instance_types, cluster, classes)
    until = _number(top.get("until", 0), "until")
    return Scenario(list(instance_types.values()), teams, policy, workloads, until)


def _cluster(value) -> tuple[dict[str, InstanceType], bool]:
    if value is None:
        return {}, False
    _object(value, "cluster", ("instance_types",), ("instance_types",))
    out: dict[str, InstanceType] = {}
    for i, item in enumerate(_list(value["instance_types"], "cluster.instance_types")):
        path = f"cluster.instance_types[{i}]"
        _object(item, path, ("name", "count", "capacity"), ("name", "capacity"))
        name = _name(item["name"], f"{path}.name")
        if name in out:
            raise ScenarioError(f"{path}.name: duplicate instance type {show(name)}")
        count = item.get("count")
        count = (
            None if count is None else _at_most(_number(count, f"{path}.count", whole=True), MAX_NODES, f"{path}.count")
        )
        out[name] = InstanceType(name, _amounts(item["capacity"], f"{path}.capacity"), count)
    return out, True


def _policy(value) -> tuple[Policy, dict[str, int]]:
    if value is None:
        return Policy(), {}
    _object(value, "policy", ("task_prioritization", "idle_compute", "priority_classes", "backfill"))
    policy = Policy(
        task_prioritization=_choice(
            value.get("task_prioritization", "fcfs"), "policy.task_prioritization", ("fcfs", "task-ranking")
        ),
        idle_compute=_choice(value.get("idle_compute", "fair-share"), "policy.idle_compute", ("fair-share", "fcfs")),
        backfill=_choice(value.get("backfill", "reserve"), "policy.backfill", BACKFILL),
    )
    classes = _object(value.get("priority_classes", {}), "policy.priority_classes")
    return policy, {
        _name(k, "policy.priority_classes key"): _number(v, f"policy.priority_classes.{k}", None, whole=True)
        for k, v in classes.items()
    }


TEAM_KEYS = (
    "name", "cohort", "fair_share_weight", "sharing", "borrow_limit_pct", "preempt_team_tasks", "quota",
    "borrowing_limit", "lending_limit", "reclaim_within_cohort", "borrow_within_cohort", "within_team",
)  # fmt: skip


def _teams(items: list, instance_types: dict[str, InstanceType], cluster: bool) -> list[Team]:
    teams: dict[str, Team] = {}
    for i, item in enumerate(items):
        path = f"teams[{i}]"
        _object(item, path, TEAM_KEYS, ("name",))
        name = _name(item["name"], f"{path}.name")
        if name in teams:
            raise ScenarioError(f"{path}.name: duplicate team {show(name)}")
        cohort = item.get("cohort", "default")
        if cohort is not None:
            cohort = _name(cohort, f"{path}.cohort")
        pct = item.get("borrow_limit_pct")
        teams[name] = Team(
            name=name,
            quota=_quota(item.get("quota", {}), f"{path}.quota", instance_types, cluster),
            cohort=cohort,
            fair_share_weight=_number(item.get("fair_share_weight", 1), f"{path}.fair_share_weight"),
            sharing=_choice(item.get("sharing", "LendAndBorrow"), f"{path}.sharing", SHARING),
            borrow_limit_pct=None if pct is None else _number(pct, f"{path}.borrow_limit_pct"),
            preempt_team_tasks=_choice(
                item.get("preempt_team_tasks", "Never"), f"{path}.preempt_team_tasks", TEAM_TASKS
            ),
            borrowing_limit=_limits(item.get("borrowing_limit"), f"{path}.borrowing_limit", instance_types, cluster),
            lending_limit=_limits(item.get("lending_limit"), f"{path}.lending_limit", instance_types, cluster),
            reclaim_within_cohort=_choice(
                item.get("reclaim_within_cohort", "Any"), f"{path}.reclaim_within_cohort", RECLAIM
            ),
            borrow_within_cohort=_choice(
                item.get("borrow_within_cohort", "Never"), f"{path}.borrow_within_cohort", BORROW_WITHIN
            ),
            within_team=_choice(item.get("within_team"), f"{path}.within_team", WITHIN_TEAM, nullable=True),
        )
    return list(teams.values())


def _known_flavor(flavor, path: str, instance_types, cluster: bool) -> str:
    _name(flavor, path)
    if cluster and flavor not in instance_types:
        raise ScenarioError(f"{path}: unknown instance type {show(flavor)} (not in cluster.instance_types)")
    return flavor


def _quota(value, path: str, instance_types, cluster: bool) -> dict[str, dict[str, float]]:
    _object(value, path)
    out = {}
    for flavor, entry in value.items():
        _known_flavor(flavor, f"{path}.{flavor}", instance_types, cluster)
        entry_path = f"{path}.{flavor}"
        _object(entry, entry_path)
        if "count" in entry:
            _number(entry["count"], f"{entry_path}.count", whole=True)
        else:
            _amounts(entry, entry_path)
        capacity = instance_types[flavor].capacity if flavor in instance_types else None
        try:
            out[flavor] = resolve_quota(capacity, {k: v for k, v in entry.items() if k not in FOR_PEOPLE})
        except ValueError as err:
            raise ScenarioError(f"{entry_path}: {err}") from None
    return out


def _limits(value, path: str, instance_types, cluster: bool):
    if value is None:
        return None
    _object(value, path)
    return {
        _known_flavor(flavor, f"{path}.{flavor}", instance_types, cluster): _amounts(entry, f"{path}.{flavor}")
        for flavor, entry in value.items()
    }


WORKLOAD_KEYS = ("name", "team", "priority", "submit", "requests", "pods", "instance_type", "duration", "running")


def _workloads(items: list, teams: list[Team], instance_types, cluster: bool, classes) -> list[WorkloadSpec]:
    by_team = {team.name: team for team in teams}
    explicit = [w.get("priority") for w in items if isinstance(w, dict)]
    numbers = [p for p in explicit if isinstance(p, int) and not isinstance(p, bool)]
    lowest = min([0, *classes.values(), *numbers]) - 1
    out, seen = [], set()
    for i, item in enumerate(items):
        path = f"workloads[{i}]"
        _object(item, path, WORKLOAD_KEYS, ("name", "team", "requests"))
        name = _name(item["name"], f"{path}.name")
        if name in seen:
            raise ScenarioError(f"{path}.name: duplicate workload {show(name)}")
        seen.add(name)
        team = item["team"]
        if not isinstance(team, str) or team not in by_team:
            raise ScenarioError(f"{path}.team: unknown team {show(team)}")
        requests = _amounts(item["requests"], f"{path}.requests")
        if not requests:
            raise ScenarioError(f"{path}.requests: names no resources")
        if not any(requests.values()):
            raise ScenarioError(f"{path}.requests: asks for nothing (every amount is 0)")
        flavor = item.get("instance_type")
        if flavor is not None:
            _known_flavor(flavor, f"{path}.instance_type", instance_types, True)
        duration = item.get("duration")
        running_on, since = _running(item.get("running"), f"{path}.running", flavor, by_team[team], instance_types)
        out.append(WorkloadSpec(
            name=name, team=team, requests=requests,
            pods=_at_most(_number(item.get("pods", 1), f"{path}.pods", 1, whole=True), MAX_PODS, f"{path}.pods"),
            priority=_priority(item.get("priority"), f"{path}.priority", classes, lowest),
            submit=_number(item.get("submit", 0), f"{path}.submit", None),
            instance_type=flavor,
            duration=None if duration is None else _number(duration, f"{path}.duration"),
            running_on=running_on, since=since,
        ))  # fmt: skip
    return out


def _priority(value, path: str, classes: dict[str, int], lowest: int) -> int:
    """A class name or an integer; absent is `lowest`, below every class and every integer given."""
    if value is None:
        return lowest
    if isinstance(value, str):
        if value not in classes:
            known = ", ".join(classes) or "none are defined"
            raise ScenarioError(f"{path}: unknown priority class {show(value)} (policy.priority_classes: {known})")
        return classes[value]
    return _number(value, path, None, whole=True)


def _running(value, path: str, flavor, team: Team, instance_types):
    if value is None:
        return None, None
    _object(value, path, ("instance_type", "since"))
    on = value.get("instance_type", flavor or next(iter(team.quota), None))
    if on is None:
        raise ScenarioError(f"{path}.instance_type: missing, and team {team.name} has no quota to guess from")
    _known_flavor(on, f"{path}.instance_type", instance_types, True)
    if flavor is not None and on != flavor:
        raise ScenarioError(f"{path}.instance_type: {show(on)} differs from the requested {show(flavor)}")
    since = _number(value.get("since", 0), f"{path}.since", None)
    if since > 0:
        raise ScenarioError(f"{path}.since: must be at most 0 (running means admitted by t=0), got {show(since)}")
    return on, since
