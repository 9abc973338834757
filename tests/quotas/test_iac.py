"""manage.py quotas export / apply: a plan, an atomic apply, idempotence, one-line errors."""

import io

import pytest
import yaml
from django.core.management import CommandError, call_command

from quotas.demo import demo_load
from quotas.models import ClusterPolicy, ComputeAllocation, ConfigVersion, InstanceType, NodeGroup, Team


def run(*args, stdin=None):
    out = io.StringIO()
    call_command("quotas", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def demo(db):
    demo_load()


@pytest.fixture
def exported(demo, tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(run("export"))
    return path


def test_export_has_every_section(exported):
    doc = yaml.safe_load(exported.read_text())
    assert set(doc) == {"instance_types", "node_groups", "priority_classes", "teams", "cluster_policy"}
    llm = next(t for t in doc["teams"] if t["name"] == "llm-pretraining")
    assert llm["allocations"]["ml.p5.48xlarge"] == {"accelerators": 32}
    assert llm["allocations"]["ml.trn1.32xlarge"] == {"instances": 2}
    assert llm["members"] == ["sam"]


def test_applying_the_export_changes_nothing(exported):
    out = run("apply", str(exported))
    assert "No changes" in out
    assert not ConfigVersion.objects.exists()


def test_dry_run_prints_the_plan_and_changes_nothing(exported):
    doc = yaml.safe_load(exported.read_text())
    vision = next(t for t in doc["teams"] if t["name"] == "vision")
    vision["fair_share_weight"] = 3
    vision["allocations"]["ml.p4d.24xlarge"] = {"accelerators": 24, "memory_gib": 1024}
    doc["teams"] = [t for t in doc["teams"] if t["name"] != "research"]
    doc["teams"].append(
        {"name": "nlp", "namespace": "hyperpod-ns-nlp", "allocations": {"ml.g5.2xlarge": {"instances": 2}}}
    )
    doc["node_groups"][0]["node_count"] = 99
    doc["cluster_policy"]["idle_compute"] = "fcfs"
    exported.write_text(yaml.safe_dump(doc))

    out = run("apply", str(exported), "--dry-run")
    assert (
        "~ team vision: fair-share weight: 2 → 3; ml.p4d.24xlarge GPUs: 16 → 24; memory: default (2304) → 1024 GiB"
        in out
    )
    assert "+ team nlp" in out and "- team research" in out
    assert "~ node group c5-nodes: node_count: 20 → 99" in out
    assert "Plan: 1 to create, 3 to change, 1 to delete." in out
    assert "Dry run" in out
    assert Team.objects.get(name="vision").fair_share_weight == 2
    assert Team.objects.filter(name="research").exists() and not Team.objects.filter(name="nlp").exists()

    out = run("apply", str(exported))
    assert "Applied." in out
    vision = Team.objects.get(name="vision")
    assert vision.fair_share_weight == 3
    assert ComputeAllocation.objects.get(team=vision, instance_type__name="ml.p4d.24xlarge").memory_gib == 1024
    assert not Team.objects.filter(name="research").exists()
    assert ClusterPolicy.load().idle_compute == "fcfs"
    assert ConfigVersion.objects.filter(team=vision).latest("number").reason == "applied from cluster.yaml"
    assert "No changes" in run("apply", str(exported))


BAD_FILES = [
    ("teams: [", "not valid YAML"),
    ("- just a list", "expected a mapping"),
    ("gpus: {}", "unknown section"),
    ("teams:\n- name: x\n", "missing namespace"),
    (
        "teams:\n- {name: vision, namespace: hyperpod-ns-vision, fair_share_weight: -1}\n",
        "team vision: fair_share_weight",
    ),
    ("teams:\n- {name: vision, namespace: Bad_NS}\n", "namespace"),
    (
        "teams:\n- {name: vision, namespace: hyperpod-ns-vision, allocations: {ml.nope: {accelerators: 1}}}\n",
        "unknown instance type",
    ),
    (
        "teams:\n- {name: vision, namespace: hyperpod-ns-vision, allocations: {ml.p5.48xlarge: {accelerators: 1.5}}}\n",
        "whole number",
    ),
    ("teams:\n- {name: vision, namespace: hyperpod-ns-vision, members: [nobody]}\n", "no user named"),
    ("teams:\n- {name: a, namespace: same}\n- {name: b, namespace: same}\n", "namespace"),
    ("instance_types: []\n", "still used"),
    ("cluster_policy: {idle_compute: sometimes}\n", "idle_compute"),
    # the bounds of scheduling.engine.bounds, through the same model validators as the pages and the API
    ("node_groups:\n- {name: p5-nodes, instance_type: ml.p5.48xlarge, node_count: 2147483647}\n", "at most 20,000"),
    (
        "teams:\n- {name: vision, namespace: hyperpod-ns-vision, allocations: {ml.p5.48xlarge: {vcpus: 1e308}}}\n",
        "at most",
    ),
    (
        "teams:\n- {name: vision, namespace: hyperpod-ns-vision, allocations: {ml.p5.48xlarge: {vcpus: 1e-320}}}\n",
        "at least 0.001",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_bad_files_one_line_error_nothing_changed(demo, tmp_path, text, message):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    before = (run("export"), ConfigVersion.objects.count())
    with pytest.raises(CommandError) as exc:
        run("apply", str(path))
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)
    assert str(exc.value).startswith("cluster.yaml: ")
    assert (run("export"), ConfigVersion.objects.count()) == before


def test_missing_file(db):
    with pytest.raises(CommandError, match="cannot read"):
        run("apply", "/nonexistent/cluster.yaml")


def test_sections_left_out_are_left_alone(demo, tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text("cluster_policy: {task_prioritization: task-ranking}\n")
    run("apply", str(path))
    assert ClusterPolicy.load().task_prioritization == "task-ranking"
    assert InstanceType.objects.count() == 6 and NodeGroup.objects.count() == 6
