"""KUBE_ADMISSION_MODE=kueue: the loop submits to Kueue and reads back what Kueue did; the engine stays out."""

import pytest

from scheduling import loop
from scheduling.kube import manifests
from scheduling.kube.models import WorkloadStatus
from scheduling.kueue_mode import SUBMITTED
from scheduling.models import Job, JobState
from tests.kube.test_through_the_loop import cluster, submit  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def kueue_cluster(cluster, settings):  # noqa: F811
    settings.KUBE_ADMISSION_MODE = "kueue"
    return cluster


def k8s_job(server, job):
    return server.job(job.team.namespace, manifests.job_name(job))


def test_jobs_go_suspended_to_the_local_queue_even_beyond_quota(kueue_cluster, scientist, team_a):
    # team-a's quota is 8 GPUs: three 4-GPU jobs would leave one waiting in portal mode; Kueue decides here.
    jobs = [submit(scientist, team_a, name=f"train-{i}") for i in range(3)]
    run = loop.admission_run(trigger="test")
    assert run.error == "" and run.admitted == 0
    for job in jobs:
        job.refresh_from_db()
        assert job.state == JobState.PENDING and job.reason == SUBMITTED and job.backend_ref
        obj = k8s_job(kueue_cluster.server, job)
        assert obj["spec"]["suspend"] is True
        assert obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == f"hyperpod-ns-{team_a.name}-localqueue"


def test_a_job_kueue_admits_runs_and_finishes_in_the_portal(kueue_cluster, scientist, team_a):
    job = submit(scientist, team_a)
    loop.admission_run(trigger="test")
    job.refresh_from_db()
    ns, name = team_a.namespace, manifests.job_name(job)
    with kueue_cluster.server.lock:  # Kueue admits the Workload and unsuspends the Job
        kueue_cluster.server.patch(("batch", "jobs"), ns, name, {"spec": {"suspend": False}})
    kueue_cluster.server.job_running(ns, name)
    run = loop.admission_run(trigger="test")
    job.refresh_from_db()
    assert run.admitted == 1 and job.state == JobState.RUNNING and job.started_at is not None
    assert [e.to_state for e in job.events.all()][-2:] == [JobState.ADMITTED, JobState.RUNNING]
    kueue_cluster.server.job_finished(ns, name)
    loop.admission_run(trigger="test")
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED


def test_kueue_reasons_and_evictions_show_in_the_portal(kueue_cluster, scientist, team_a):
    waiting, running = submit(scientist, team_a, name="waits"), submit(scientist, team_a, name="runs")
    loop.admission_run(trigger="test")
    WorkloadStatus.objects.create(
        job=waiting,
        workload="w1",
        local_queue="hyperpod-ns-team-a-localqueue",
        position=2,
        reason="couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu",
    )
    Job.objects.filter(pk=running.pk).update(state=JobState.RUNNING)
    WorkloadStatus.objects.create(job=running, workload="w2", evicted=True, reason="Preempted")
    run = loop.admission_run(trigger="test")
    waiting.refresh_from_db()
    running.refresh_from_db()
    assert waiting.reason == (
        "Kueue: couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
        "(position 2 in hyperpod-ns-team-a-localqueue)"
    )
    assert run.preempted == 1
    assert running.state == JobState.PENDING and running.preemption_count == 1
    assert running.reason == "evicted by Kueue: Preempted"


def test_an_unreachable_cluster_in_kueue_mode_loses_nothing(kueue_cluster, scientist, team_a):
    kueue_cluster.server.stop()
    job = submit(scientist, team_a)
    run = loop.admission_run(trigger="test")
    job.refresh_from_db()
    assert run.error == "" and job.state == JobState.PENDING and job.backend_ref == ""
    assert job.reason.startswith("cluster unreachable")
    kueue_cluster.start()
    loop.admission_run(trigger="test")
    job.refresh_from_db()
    assert job.reason == SUBMITTED and k8s_job(kueue_cluster.server, job)["spec"]["suspend"] is True
