"""Every scenario file, project-local and shared, run through simulate and checked against its expect.

New files in tests/engine/scenarios/ or ../shared/scenarios/ are picked up without a code change.
"""

import glob
import io
import json
import os

import pytest

from scheduling.engine import simulate_scenario

from .helpers import match

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FOLDERS = [os.path.join(HERE, "scenarios"), os.path.join(os.path.dirname(REPO), "shared", "scenarios")]
FILES = [path for folder in FOLDERS if os.path.isdir(folder) for path in sorted(glob.glob(f"{folder}/*.json"))]


def _label(path):
    return f"{os.path.basename(os.path.dirname(os.path.dirname(path)))}/{os.path.basename(path)}"


def test_scenario_folders_are_found():
    assert any(path.startswith(FOLDERS[0]) for path in FILES), "the project-local scenarios are missing"
    assert len(FILES) >= 6


@pytest.mark.parametrize("path", FILES, ids=[_label(p) for p in FILES])
def test_scenario_meets_its_expectations(path):
    """Through `manage.py simulate` itself, as the shared hook runs it."""
    from django.core.management import call_command

    with open(path) as handle:
        data = json.load(handle)
    printed = io.StringIO()
    call_command("simulate", path, stdout=printed)
    out = json.loads(printed.getvalue())
    assert match(data.get("expect", {}), out) is None
    for name, workload in out["workloads"].items():
        if workload["state"] == "pending":
            assert workload["reason"], f"{name} waits without a reason"


def test_matcher_can_fail():
    assert match({"a": {"b": 1}}, {"a": {"b": 2}}) == "$.a.b: expected 1, got 2"
    assert match({"a": 1}, {}) == "$.a: missing"
    assert match({"a": 1.0000001}, {"a": 1}) is None


def test_simulate_command_prints_the_same_json():
    from django.core.management import call_command

    path = os.path.join(HERE, "scenarios", "reclaim-lent-quota.json")
    out = io.StringIO()
    call_command("simulate", path, stdout=out)
    with open(path) as handle:
        assert json.loads(out.getvalue()) == simulate_scenario(json.load(handle))
