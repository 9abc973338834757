"""The Job watch (drops, 410 Gone) and Kueue mode, against the fake API server."""

from datetime import UTC, datetime, timedelta

import pytest

from scheduling.kube import manifests
from scheduling.kube.watch import JobWatcher, watcher_for
from scheduling.models import Job

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def labelled_job(server, ns, name):
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {manifests.MANAGED_BY: manifests.MANAGER}},
        "spec": {"suspend": False, "template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}},
    }
    with server.lock:
        return server.create(("batch", "jobs"), ns, body)


def test_a_watch_that_drops_mid_stream_reconnects_without_losing_events(kube, apiserver):
    apiserver.add_namespace("ns")
    watcher = JobWatcher()
    watcher.sync(kube.batch, wait=0.1)
    for i in range(5):
        labelled_job(apiserver, "ns", f"j{i}")
    apiserver.job_running("ns", "j0")
    apiserver.delete_job("ns", "j4")
    apiserver.drop_watch_after = 2  # the connection breaks after two of the seven events

    jobs = watcher.sync(kube.batch, wait=0.1)

    assert watcher.reconnects == 1 and watcher.relists == 1  # reconnected from its resourceVersion, no relist
    assert sorted(name for _, name in jobs) == ["j0", "j1", "j2", "j3"]
    assert jobs[("ns", "j0")]["status"]["ready"] == 1
    assert watcher.resource_version == str(apiserver.rv)


def test_a_too_old_resource_version_relists(kube, apiserver):
    apiserver.add_namespace("ns")
    watcher = JobWatcher()
    watcher.sync(kube.batch, wait=0.1)
    labelled_job(apiserver, "ns", "a")
    apiserver.compact()  # history is gone: the watch answers 410 "too old resource version"
    labelled_job(apiserver, "ns", "b")

    jobs = watcher.sync(kube.batch, wait=0.1)

    assert watcher.relists == 2
    assert sorted(name for _, name in jobs) == ["a", "b"]


def test_the_watch_only_sees_the_portals_jobs(kube, apiserver):
    apiserver.add_namespace("ns")
    labelled_job(apiserver, "ns", "ours")
    with apiserver.lock:
        apiserver.create(("batch", "jobs"), "ns", {"metadata": {"name": "theirs"}, "spec": {"template": {}}})
    jobs = JobWatcher().sync(kube.batch, wait=0.1)
    assert list(jobs) == [("ns", "ours")]


def test_the_watcher_is_kept_per_api_server_with_its_resource_version(kube, apiserver):
    apiserver.add_namespace("ns")
    watcher_for(kube.host).sync(kube.batch, wait=0.1)
    first_rv = watcher_for(kube.host).resource_version
    labelled_job(apiserver, "ns", "later")
    watcher_for(kube.host).sync(kube.batch, wait=0.1)
    assert watcher_for(kube.host).relists == 1
    assert int(watcher_for(kube.host).resource_version) > int(first_rv)


# -- Kueue mode ------------------------------------------------------------------------------------


@pytest.fixture
def queued_job(team_a, scientist, p5):
    from quotas.models import PriorityClass

    return Job.objects.create(
        team=team_a,
        submitted_by=scientist,
        name="kq",
        accelerators=8,
        vcpus=8,
        memory_gib=64,
        image="x",
        priority_class=PriorityClass.objects.create(name="inference", weight=1000),
    )


def test_kueue_mode_submits_to_the_local_queue_and_leaves_the_job_suspended(kueue, apiserver, queued_job, p5):
    ref = kueue.start(queued_job, instance_type=p5.name, nodes=None)
    obj = apiserver.job("hyperpod-ns-team-a", ref.split("/")[1])
    assert obj["spec"]["suspend"] is True  # Kueue unsuspends on admission
    labels = obj["metadata"]["labels"]
    assert labels[manifests.LABEL_QUEUE] == "hyperpod-ns-team-a-localqueue"
    assert labels[manifests.LABEL_KUEUE_PRIORITY] == "inference"
    assert not any(k.startswith("kueue.x-k8s.io/") for k in obj["spec"]["template"]["metadata"]["labels"])
    assert not [r for r in apiserver.requests if r[0] == "PUT"]

    # Kueue admits: the Job runs, and observe() reports it.
    apiserver.set_job_status("hyperpod-ns-team-a", ref.split("/")[1], active=1, ready=1)
    with apiserver.lock:
        apiserver.patch(("batch", "jobs"), "hyperpod-ns-team-a", ref.split("/")[1], {"spec": {"suspend": False}})
    Job.objects.filter(pk=queued_job.pk).update(state="admitted")
    (seen,) = kueue.observe([Job.objects.get(pk=queued_job.pk)], now=NOW)
    assert seen.state == "running"


def test_workload_status_gives_reasons_and_positions(kueue, apiserver):
    apiserver.add_namespace("hyperpod-ns-team-a")
    q = "hyperpod-ns-team-a-localqueue"
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    pending = {
        "type": "QuotaReserved",
        "status": "False",
        "reason": "Pending",
        "message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
        "ml.p5.48xlarge, 8 more needed",
    }
    apiserver.add_workload(
        "hyperpod-ns-team-a",
        "job-1-a",
        queue=q,
        priority=10,
        conditions=[pending],
        created=t0.isoformat().replace("+00:00", "Z"),
    )
    apiserver.add_workload(
        "hyperpod-ns-team-a",
        "job-2-b",
        queue=q,
        priority=100,
        conditions=[pending],
        created=(t0 + timedelta(minutes=5)).isoformat().replace("+00:00", "Z"),
    )
    apiserver.add_workload(
        "hyperpod-ns-team-a",
        "job-3-c",
        queue=q,
        cluster_queue="hyperpod-ns-team-a-clusterqueue",
        conditions=[
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"},
        ],
    )
    apiserver.add_workload(
        "hyperpod-ns-team-a",
        "job-4-d",
        queue=q,
        conditions=[
            {
                "type": "Evicted",
                "status": "True",
                "reason": "Preempted",
                "message": "Preempted to accommodate a workload (UID: 1) due to reclamation within the cohort",
            },
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "waiting"},
        ],
        requeue={"count": 2, "requeueAt": "2026-01-01T00:10:00Z"},
        created=(t0 + timedelta(minutes=9)).isoformat().replace("+00:00", "Z"),
    )

    views = {v.job_name: v for v in kueue.workloads()}

    assert views["job-2-b"].position == 1  # higher priority first
    assert views["job-1-a"].position == 2
    assert views["job-4-d"].position == 3
    assert views["job-3-c"].position is None and views["job-3-c"].admitted
    assert "insufficient unused quota for nvidia.com/gpu" in views["job-1-a"].reason
    assert views["job-3-c"].reason == "admitted by Kueue to hyperpod-ns-team-a-clusterqueue"
    assert views["job-4-d"].reason.startswith("evicted by Kueue (Preempted: Preempted to accommodate")
    assert "requeued 2 time(s), next try at 2026-01-01 00:10:00 UTC" in views["job-4-d"].reason


def kueue_objects():
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ResourceFlavor",
            "metadata": {"name": "ml.p5.48xlarge"},
            "spec": {"nodeLabels": {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"}},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "hyperpod-ns-team-a-clusterqueue"},
            "spec": {
                "cohort": "default",
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {"name": "ml.p5.48xlarge", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"name": "hyperpod-ns-team-a-localqueue", "namespace": "hyperpod-ns-team-a"},
            "spec": {"clusterQueue": "hyperpod-ns-team-a-clusterqueue"},
        },
    ]


def test_kueue_objects_are_created_then_updated_with_their_resource_version(kueue, apiserver):
    objects = kueue_objects()
    assert [r[2] for r in kueue.apply_objects(objects)] == ["created"] * 3
    assert apiserver.kueue_object("localqueues", "hyperpod-ns-team-a-localqueue", "hyperpod-ns-team-a")

    assert [r[2] for r in kueue.apply_objects(objects)] == ["unchanged"] * 3

    objects[1]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 16
    assert [r[2] for r in kueue.apply_objects(objects)] == ["unchanged", "updated", "unchanged"]
    cq = apiserver.kueue_object("clusterqueues", "hyperpod-ns-team-a-clusterqueue")
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 16


def test_check_reports_missing_permissions(kueue, apiserver):
    apiserver.denied.add(("batch", "jobs", "watch"))
    checks = {c.name: c for c in kueue.check()}
    assert checks["API server"].ok
    assert not checks["RBAC jobs.batch"].ok and checks["RBAC jobs.batch"].detail == "missing: watch"
    assert checks["RBAC workloads.kueue.x-k8s.io"].ok
    assert checks["Kueue"].ok


def test_check_reports_an_unreachable_server(kube, apiserver):
    apiserver.stop()
    (only,) = kube.check()
    assert not only.ok and "cannot reach" in only.detail
