"""The backend's Jobs, through the official client over HTTP against the fake API server."""

from datetime import UTC, datetime

import pytest

from quotas.models import PriorityClass
from scheduling.backends.base import ClusterUnreachable
from scheduling.kube import manifests
from scheduling.kube.client import KubeRejected
from scheduling.models import Job
from tests.kube.conftest import backend_for

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def job(team_a, scientist, p5):
    high = PriorityClass.objects.create(name="high", weight=100)
    return Job.objects.create(
        team=team_a,
        submitted_by=scientist,
        name="Train LLaMA 7B!",
        instance_type=p5,
        accelerators=8,
        vcpus=96.5,
        memory_gib=512,
        pods=2,
        priority_class=high,
        image="nvcr.io/nvidia/pytorch:24.05-py3",
        command="torchrun train.py",
    )


def test_start_creates_the_namespace_and_a_suspended_job_then_unsuspends_it(kube, apiserver, job, p5):
    ref = kube.start(job, instance_type=p5.name, nodes=[0, 1])

    name = manifests.job_name(job)
    assert ref == f"hyperpod-ns-team-a/{name}"
    assert name == f"job-{job.pk}-train-llama-7b"
    created = next(e for e in apiserver.events[("batch", "jobs")] if e[1] == "ADDED")[2]
    assert created["spec"]["suspend"] is True  # created suspended, unsuspended on admission
    obj = apiserver.job("hyperpod-ns-team-a", name)
    assert obj["spec"]["suspend"] is False
    labels = obj["metadata"]["labels"]
    assert labels[manifests.LABEL_TEAM] == "team-a"
    assert labels[manifests.LABEL_JOB_ID] == str(job.pk)
    assert labels[manifests.LABEL_PRIORITY] == "high"
    assert obj["spec"]["parallelism"] == obj["spec"]["completions"] == 2
    pod = obj["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    resources = pod["containers"][0]["resources"]
    assert resources["requests"] == {"nvidia.com/gpu": "8", "cpu": "96500m", "memory": "512Gi"}
    assert resources["limits"] == resources["requests"]
    assert (
        apiserver.objects[("", "namespaces")][("", "hyperpod-ns-team-a")]["metadata"]["labels"][manifests.LABEL_TEAM]
        == "team-a"
    )


def test_portal_mode_leaves_the_kueue_queue_label_off_unless_asked(kube, apiserver, job, p5, settings):
    kube.start(job, instance_type=p5.name, nodes=None)
    assert (
        manifests.LABEL_QUEUE not in apiserver.job("hyperpod-ns-team-a", manifests.job_name(job))["metadata"]["labels"]
    )

    settings.KUBE_PORTAL_MODE_QUEUE_LABEL = True
    body = manifests.job_manifest(job, mode="portal", queue_label_in_portal_mode=True)
    assert body["metadata"]["labels"][manifests.LABEL_QUEUE] == "hyperpod-ns-team-a-localqueue"


def test_neuron_jobs_ask_for_neuron_devices_and_tolerate_the_neuron_taint(team_a, scientist, db):
    from quotas.models import InstanceType

    trn = InstanceType.objects.create(
        name="ml.trn1.32xlarge", accelerator_resource="neuron", accelerators=16, vcpus=128, memory_gib=512
    )
    job = Job.objects.create(
        team=team_a, submitted_by=scientist, name="t", instance_type=trn, accelerators=4, image="x"
    )
    body = manifests.job_manifest(job, mode="portal", instance_type=trn)
    pod = body["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {"aws.amazon.com/neurondevice": "4"}
    assert pod["tolerations"][0]["key"] == "aws.amazon.com/neuron"
    assert "command" not in pod["containers"][0]


def test_a_job_created_twice_is_treated_as_already_there(kube, apiserver, job, p5):
    ref1 = kube.start(job, instance_type=p5.name, nodes=None)
    ref2 = kube.start(job, instance_type=p5.name, nodes=None)  # e.g. the loop retried after a crash

    assert ref1 == ref2
    creates = [r for r in apiserver.requests if r[0] == "POST" and r[1].endswith("/jobs")]
    assert len(creates) == 2  # the second create got 409 AlreadyExists ...
    assert len(apiserver.jobs()) == 1  # ... and nothing was duplicated


def test_a_foreign_job_with_the_same_name_is_not_taken_over(kube, apiserver, job, p5):
    apiserver.add_namespace("hyperpod-ns-team-a")
    body = manifests.job_manifest(job, mode="portal")
    body["metadata"]["labels"][manifests.LABEL_JOB_ID] = "999999"
    with apiserver.lock:
        apiserver.create(("batch", "jobs"), "hyperpod-ns-team-a", body)
    with pytest.raises(KubeRejected, match="not portal job"):
        kube.start(job, instance_type=p5.name, nodes=None)


def test_resource_version_conflicts_are_retried(kube, apiserver, job, p5):
    apiserver.interfering_writes = 2  # the Job controller writes twice between our read and our update

    kube.start(job, instance_type=p5.name, nodes=None)

    puts = [r for r in apiserver.requests if r[0] == "PUT"]
    assert len(puts) == 3  # two 409 Conflicts, then success
    assert apiserver.job("hyperpod-ns-team-a", manifests.job_name(job))["spec"]["suspend"] is False


def test_endless_conflicts_end_as_a_retry_later(kube, apiserver, job, p5):
    apiserver.interfering_writes = 100
    with pytest.raises(ClusterUnreachable, match="kept changing"):
        kube.start(job, instance_type=p5.name, nodes=None)


def test_preemption_suspends_with_a_patch_and_a_restart_moves_the_job(kube, apiserver, job, p5, db):
    from quotas.models import InstanceType

    kube.start(job, instance_type=p5.name, nodes=None)
    kube.stop(job, reason="reclaimed by team-b", preempted=True)

    name = manifests.job_name(job)
    assert apiserver.job("hyperpod-ns-team-a", name)["spec"]["suspend"] is True
    patch = [r for r in apiserver.requests if r[0] == "PATCH"][-1]
    assert patch[2] == "application/strategic-merge-patch+json"

    p4 = InstanceType.objects.create(
        name="ml.p4d.24xlarge", accelerator_resource="gpu", accelerators=8, vcpus=96, memory_gib=1152
    )
    kube.start(job, instance_type=p4.name, nodes=None)  # re-admitted elsewhere: allowed while suspended
    obj = apiserver.job("hyperpod-ns-team-a", name)
    assert obj["spec"]["suspend"] is False
    assert obj["spec"]["template"]["spec"]["nodeSelector"] == {"node.kubernetes.io/instance-type": "ml.p4d.24xlarge"}


def test_cancel_deletes_and_deleting_again_is_fine(kube, apiserver, job, p5):
    kube.start(job, instance_type=p5.name, nodes=None)
    kube.stop(job, reason="cancelled", preempted=False)
    assert apiserver.jobs() == []
    kube.stop(job, reason="cancelled", preempted=False)  # 404 NotFound: already gone
    kube.stop(job, reason="preempted", preempted=True)  # suspending a gone Job is not an error either
    assert [r[0] for r in apiserver.requests[-2:]] == ["DELETE", "PATCH"]


def test_observe_reports_running_succeeded_and_failed(kube, apiserver, job, p5, team_a, scientist):
    other = Job.objects.create(team=team_a, submitted_by=scientist, name="other", accelerators=1, image="x")
    kube.start(job, instance_type=p5.name, nodes=None)
    kube.start(other, instance_type=p5.name, nodes=None)
    Job.objects.filter(pk__in=[job.pk, other.pk]).update(state="admitted")
    jobs = lambda: list(Job.objects.select_related("team").filter(pk__in=[job.pk, other.pk]))  # noqa: E731

    assert kube.observe(jobs(), now=NOW) == []  # created, not running yet

    apiserver.job_running("hyperpod-ns-team-a", manifests.job_name(job), pods=2)
    seen = kube.observe(jobs(), now=NOW)
    assert [(o.job_id, o.state) for o in seen] == [(job.pk, "running")]
    assert seen[0].at.tzinfo is not None

    Job.objects.filter(pk=job.pk).update(state="running")
    apiserver.job_finished("hyperpod-ns-team-a", manifests.job_name(job))
    apiserver.job_finished("hyperpod-ns-team-a", manifests.job_name(other), failed=True, message="OOMKilled")
    seen = {o.job_id: o for o in kube.observe(jobs(), now=NOW)}
    assert seen[job.pk].state == "succeeded"
    assert seen[other.pk].state == "failed"
    assert "BackoffLimitExceeded: OOMKilled" in seen[other.pk].reason


def test_a_job_deleted_behind_the_portals_back_is_reported_failed(kube, apiserver, job, p5):
    kube.start(job, instance_type=p5.name, nodes=None)
    Job.objects.filter(pk=job.pk).update(state="running")
    kube.observe([Job.objects.get(pk=job.pk)], now=NOW)
    apiserver.delete_job("hyperpod-ns-team-a", manifests.job_name(job))

    (seen,) = kube.observe([Job.objects.get(pk=job.pk)], now=NOW)
    assert (seen.state, seen.at) == ("failed", NOW)
    assert "deleted outside the portal" in seen.reason


def test_unreachable_api_server_raises_promptly(apiserver, job, p5, settings):
    import time

    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 1.0
    kube = backend_for(apiserver.url)
    apiserver.stop()
    started = time.monotonic()
    for action in (
        lambda: kube.start(job, instance_type=p5.name, nodes=None),
        lambda: kube.stop(job, reason="x", preempted=True),
        lambda: kube.observe([job], now=NOW),
        kube.inventory,
    ):
        with pytest.raises(ClusterUnreachable, match="cannot reach"):
            action()
    assert time.monotonic() - started < 5
