"""The Kueue export validates against Kueue's own v1beta1 CRD schemas and maps the policy as documented."""

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from django.core.management import call_command

from quotas import services
from quotas.demo import demo_load
from quotas.kueue import kueue_objects
from quotas.models import PriorityClass

SCHEMAS = Path(__file__).parent / "kueue_schemas"


def _schema(kind):
    return json.loads((SCHEMAS / f"{kind}.v1beta1.json").read_text())


@pytest.fixture
def demo(db):
    demo_load()


def test_every_object_validates_against_the_crd_schema(demo):
    objects = kueue_objects()
    kinds = {o["kind"] for o in objects}
    assert kinds == {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
    for obj in objects:
        assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta1"
        jsonschema.validate(obj, _schema(obj["kind"]))


def test_schema_validation_can_fail(demo):
    queue = next(o for o in kueue_objects() if o["kind"] == "ClusterQueue")
    queue["spec"]["preemption"]["withinClusterQueue"] = "Sometimes"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(queue, _schema("ClusterQueue"))


def _by(kind, name):
    return next(o for o in kueue_objects() if o["kind"] == kind and o["metadata"]["name"] == name)


def test_cluster_queue_mapping(demo):
    cq = _by("ClusterQueue", "hyperpod-ns-llm-pretraining-clusterqueue")
    spec = cq["spec"]
    assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "hyperpod-ns-llm-pretraining"}}
    group = spec["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu", "aws.amazon.com/neurondevice"]
    p5 = next(f for f in group["flavors"] if f["name"] == "ml.p5.48xlarge")
    quota = {r["name"]: r for r in p5["resources"]}
    # 32 GPUs of 8-GPU nodes: 4 nodes' worth of vCPUs and memory; borrow limit 50 %.
    assert quota["nvidia.com/gpu"] == {"name": "nvidia.com/gpu", "nominalQuota": 32, "borrowingLimit": 16}
    assert quota["cpu"]["nominalQuota"] == 768 and quota["memory"]["nominalQuota"] == "8192Gi"
    # Every flavor lists every covered resource, in order (Kueue's rule, not in the JSON schema).
    for flavor in group["flavors"]:
        assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
    assert spec["fairSharing"] == {"weight": 4}
    assert spec["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}  # fcfs policy


def test_sharing_strategies(demo):
    dont_lend = _by("ClusterQueue", "hyperpod-ns-inference-clusterqueue")
    for flavor in dont_lend["spec"]["resourceGroups"][0]["flavors"]:
        for r in flavor["resources"]:
            assert r["lendingLimit"] in (0, "0Gi") and r["borrowingLimit"] in (0, "0Gi")
    lend = _by("ClusterQueue", "hyperpod-ns-recsys-clusterqueue")
    r = lend["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert r["borrowingLimit"] in (0, "0Gi") and "lendingLimit" not in r
    no_cap = _by("ClusterQueue", "hyperpod-ns-speech-clusterqueue")
    assert all(
        "borrowingLimit" not in r for f in no_cap["spec"]["resourceGroups"][0]["flavors"] for r in f["resources"]
    )


def test_policy_changes_preemption_and_fair_sharing(demo):
    services.cluster_policy_update(task_prioritization="task-ranking", idle_compute="fcfs")
    cq = _by("ClusterQueue", "hyperpod-ns-llm-pretraining-clusterqueue")
    assert cq["spec"]["preemption"]["withinClusterQueue"] == "LowerPriority"
    assert "fairSharing" not in cq["spec"]


def test_local_queues_flavors_and_priorities(demo):
    lq = _by("LocalQueue", "hyperpod-ns-vision-localqueue")
    assert lq["metadata"]["namespace"] == "hyperpod-ns-vision"
    assert lq["spec"] == {"clusterQueue": "hyperpod-ns-vision-clusterqueue"}
    rf = _by("ResourceFlavor", "ml.trn1.32xlarge")
    assert rf["spec"]["nodeLabels"] == {"node.kubernetes.io/instance-type": "ml.trn1.32xlarge"}
    wpc = _by("WorkloadPriorityClass", "inference-priority")
    assert wpc["value"] == PriorityClass.objects.get(name="inference-priority").weight


def test_command_and_download_are_multi_document_yaml(demo, capsys, client_for, manager_user):
    call_command("quotas", "kueue")
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert len(docs) == len(kueue_objects())
    response = client_for(manager_user).get("/policy/kueue.yaml")
    assert response["Content-Disposition"].startswith("attachment")
    assert list(yaml.safe_load_all(response.content)) == docs
