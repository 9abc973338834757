"""Malformed scenarios: one clear line naming the problem, exit status 2, never a traceback."""

import copy
import json
import os
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduling.engine import ScenarioError, simulate_scenario

from .helpers import gpu_node, job, scenario

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

VALID = scenario(
    teams=[{"name": "a", "quota": {"gpu-node": {"gpu": 8}}}, {"name": "b", "quota": {"gpu-node": {"gpu": 8}}}],
    workloads=[job("w0", "a"), job("w1", "b", 2)],
    cluster=[gpu_node()],
    policy={"priority_classes": {"high": 10}},
)


def broken(change):
    data = copy.deepcopy(VALID)
    change(data)
    return data


def _set(path, value):
    def change(data):
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


CASES = {
    "unknown team": (_set(["workloads", 1, "team"], "zz"), 'workloads[1].team: unknown team "zz"'),
    "unknown instance type in quota": (
        _set(["teams", 0, "quota"], {"gpu-nod": {"gpu": 1}}),
        'teams[0].quota.gpu-nod: unknown instance type "gpu-nod"',
    ),
    "unknown instance type on a workload": (
        _set(["workloads", 0, "instance_type"], "tpu"),
        'workloads[0].instance_type: unknown instance type "tpu"',
    ),
    "negative quantity": (
        _set(["workloads", 0, "requests", "gpu"], -1),
        "workloads[0].requests.gpu: must be a non-negative number, got -1",
    ),
    "non-numeric quantity": (
        _set(["workloads", 1, "requests", "gpu"], "two"),
        'workloads[1].requests.gpu: must be a non-negative number, got "two"',
    ),
    "zero pods": (_set(["workloads", 0, "pods"], 0), "workloads[0].pods: must be a whole number of at least 1, got 0"),
    "fractional pods": (_set(["workloads", 0, "pods"], 1.5), "workloads[0].pods: must be a whole number"),
    "unknown policy value": (
        _set(["policy", "idle_compute"], "random"),
        'policy.idle_compute: must be one of fair-share, fcfs, got "random"',
    ),
    "duplicate workload": (_set(["workloads", 1, "name"], "w0"), 'workloads[1].name: duplicate workload "w0"'),
    "duplicate team": (_set(["teams", 1, "name"], "a"), 'teams[1].name: duplicate team "a"'),
    "no resources": (_set(["workloads", 0, "requests"], {}), "workloads[0].requests: names no resources"),
    "all-zero request": (_set(["workloads", 0, "requests"], {"gpu": 0}), "workloads[0].requests: asks for nothing"),
    "unknown key": (_set(["workloads", 0, "gpus"], 1), "workloads[0].gpus: unknown key"),
    "unknown top-level key": (_set(["clusters"], {}), "scenario.clusters: unknown key"),
    "negative weight": (
        _set(["teams", 0, "fair_share_weight"], -1),
        "teams[0].fair_share_weight: must be a non-negative number, got -1",
    ),
    "negative borrow limit": (
        _set(["teams", 0, "borrow_limit_pct"], -5),
        "teams[0].borrow_limit_pct: must be a non-negative number, got -5",
    ),
    "bool where a number is expected": (
        _set(["workloads", 0, "requests", "gpu"], True),
        "workloads[0].requests.gpu: must be a non-negative number, got true",
    ),
    "unknown priority class": (
        _set(["workloads", 0, "priority"], "urgent"),
        'workloads[0].priority: unknown priority class "urgent"',
    ),
    "unknown sharing": (_set(["teams", 0, "sharing"], "Share"), "teams[0].sharing: must be one of DontLend"),
    "negative count": (
        _set(["cluster", "instance_types", 0, "count"], -2),
        "cluster.instance_types[0].count: must be a whole number of at least 0, got -2",
    ),
    "running in the future": (
        _set(["workloads", 0, "running"], {"instance_type": "gpu-node", "since": 5}),
        "workloads[0].running.since: must be at most 0",
    ),
    "running beyond the nodes": (
        _set(["workloads", 0, "running"], {"instance_type": "gpu-node", "since": 0}),
        None,
    ),
    "absurd node count": (
        _set(["cluster", "instance_types", 0, "count"], 10**12),
        "cluster.instance_types[0].count: must be at most 20000",
    ),
    "teams not a list": (_set(["teams"], {"a": 1}), "teams: must be a list"),
    "negative until": (_set(["until"], -1), "until: must be a non-negative number"),
    "count without a cluster": (
        lambda d: (d.pop("cluster"), d["teams"][0].update(quota={"x": {"count": 2}})),
        "teams[0].quota.x: count needs the instance type's capacity",
    ),
    "bad lending limit": (
        _set(["teams", 0, "lending_limit"], {"gpu-node": {"gpu": "all"}}),
        'teams[0].lending_limit.gpu-node.gpu: must be a non-negative number, got "all"',
    ),
}
CASES["running beyond the nodes"] = (
    lambda d: d["workloads"].append(job("huge", "a", 9, running={"instance_type": "gpu-node", "since": 0})),
    "workloads[2].running: huge does not fit on the free gpu-node nodes",
)


def test_the_valid_base_runs():
    assert simulate_scenario(copy.deepcopy(VALID))["workloads"]["w1"]["state"] == "running"


@pytest.mark.parametrize("name", CASES)
def test_malformed_scenario_is_named_in_one_line(name):
    change, message = CASES[name]
    with pytest.raises(ScenarioError) as err:
        simulate_scenario(broken(change))
    text = str(err.value)
    assert text.startswith(message), text
    assert "\n" not in text


@pytest.mark.parametrize("text", ["{", "[1, 2]", '"just a string"', "NaN"])
def test_not_a_scenario_object(tmp_path, text):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(CommandError) as err:
        call_command("simulate", str(path))
    assert err.value.returncode == 2
    assert str(path) in str(err.value) or "scenario" in str(err.value)


def test_missing_file_exits_2():
    with pytest.raises(CommandError) as err:
        call_command("simulate", "/nonexistent/scenario.json")
    assert err.value.returncode == 2
    assert "cannot read" in str(err.value)


@pytest.mark.parametrize("name", ["unknown team", "non-numeric quantity", "bool where a number is expected"])
def test_command_line_exits_2_with_one_line_and_no_traceback(tmp_path, name):
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(broken(CASES[name][0])))
    env = {**os.environ, "DEBUG": os.environ.get("DEBUG", "true")}
    proc = subprocess.run(
        [sys.executable, "manage.py", "simulate", str(path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert CASES[name][1] in lines[0]
    assert proc.stdout == ""


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*prefix, i))


JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)  # fmt: skip
ALL_PATHS = [p for p in _paths(VALID) if p]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(ALL_PATHS), JUNK), min_size=1, max_size=3))
def test_any_corruption_is_either_accepted_or_named_in_one_line(corruptions):
    data = copy.deepcopy(VALID)
    for path, value in corruptions:
        try:
            _set(list(path), value)(data)
        except (KeyError, IndexError, TypeError):
            continue
    try:
        simulate_scenario(data)
    except ScenarioError as err:
        assert "\n" not in str(err) and str(err)
