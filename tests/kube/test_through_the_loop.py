"""The admission loop with CLUSTER_BACKEND=kubernetes, configured by a kubeconfig file like an operator's."""

import pytest

from scheduling import loop
from scheduling.backends import get_backend
from scheduling.backends.kubernetes import KubernetesCluster
from scheduling.kube import manifests
from scheduling.kube.client import KubeConfigError
from scheduling.models import Job, JobState
from scheduling.services import JobRequest, job_submit
from tests.kube.fake_apiserver import FakeApiServer

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {{server: "{url}"}}
users:
- name: portal
  user: {{token: not-checked}}
contexts:
- name: fake
  context: {{cluster: fake, user: portal}}
current-context: fake
"""


@pytest.fixture
def cluster(settings, tmp_path):
    """A fake API server reached through a kubeconfig file; `restart()` brings up a new one (new port)."""

    class Cluster:
        server = None
        path = tmp_path / "kubeconfig"

        def start(self):
            self.server = FakeApiServer().start()
            self.path.write_text(KUBECONFIG.format(url=self.server.url))
            return self.server

    c = Cluster()
    c.start()
    settings.CLUSTER_BACKEND = "kubernetes"
    settings.KUBECONFIG = str(c.path)
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 1.0
    settings.KUBE_WATCH_SECONDS = 0.2
    yield c
    c.server.stop()


def submit(user, team, name="train"):
    return job_submit(
        user=user,
        request=JobRequest(team=team.name, name=name, image="pytorch:2", accelerators=4, vcpus=8, memory_gib=64),
    )


def test_get_backend_reads_the_kubeconfig(cluster):
    backend = get_backend()
    assert isinstance(backend, KubernetesCluster)
    assert backend.host == cluster.server.url
    assert backend.mode == "portal"


def test_a_missing_kubeconfig_is_a_clear_error_not_a_crash(settings, tmp_path, scientist, team_a):
    settings.CLUSTER_BACKEND = "kubernetes"
    settings.KUBECONFIG = str(tmp_path / "nope.yaml")
    with pytest.raises(KubeConfigError, match="does not exist"):
        get_backend().inventory()
    job = submit(scientist, team_a)
    loop.admission_run(trigger="test")  # KubeConfigError is a ClusterUnreachable: the loop carries on
    job.refresh_from_db()
    assert job.state == JobState.ADMITTED and job.reason == loop.UNREACHABLE


def test_admitted_jobs_run_on_the_cluster_and_finish(cluster, scientist, team_a):
    job = submit(scientist, team_a)
    loop.admission_run(trigger="test")
    job.refresh_from_db()
    assert job.state == JobState.ADMITTED
    assert job.backend_ref == f"hyperpod-ns-team-a/{manifests.job_name(job)}"
    obj = cluster.server.job("hyperpod-ns-team-a", manifests.job_name(job))
    assert obj["spec"]["suspend"] is False

    cluster.server.job_running("hyperpod-ns-team-a", manifests.job_name(job))
    loop.cluster_sync()
    job.refresh_from_db()
    assert job.state == JobState.RUNNING and job.started_at

    cluster.server.job_finished("hyperpod-ns-team-a", manifests.job_name(job))
    assert loop.cluster_sync() == 1
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.finished_at


def test_an_unreachable_api_server_loses_nothing(cluster, scientist, team_a):
    cluster.server.stop()  # the API server goes away
    first, second = submit(scientist, team_a, "first"), submit(scientist, team_a, "second")

    run = loop.admission_run(trigger="test")
    assert run.error == ""  # the loop kept running
    for job in (first, second):
        job.refresh_from_db()
        assert (job.state, job.reason, job.backend_ref) == (JobState.ADMITTED, loop.UNREACHABLE, "")
    assert loop.cluster_sync() == 0  # observing fails quietly too

    server = cluster.start()  # it comes back (at a new address, through the same kubeconfig file)
    loop.carry_out()
    for job in (first, second):
        job.refresh_from_db()
        assert job.backend_ref.endswith(manifests.job_name(job))
        assert server.job("hyperpod-ns-team-a", manifests.job_name(job))["spec"]["suspend"] is False


def test_preemption_suspends_the_job_and_readmission_resumes_it(cluster, scientist, team_a):
    job = submit(scientist, team_a)
    loop.admission_run(trigger="test")
    job.refresh_from_db()
    name = manifests.job_name(job)
    # What the loop does when the engine preempts: back to pending, marked for stopping on the cluster.
    Job.objects.filter(pk=job.pk).update(state=JobState.PENDING, backend_stop_pending=True)
    loop.carry_out()
    assert cluster.server.job("hyperpod-ns-team-a", name)["spec"]["suspend"] is True

    loop.admission_run(trigger="test")
    job.refresh_from_db()
    assert job.state == JobState.ADMITTED and job.backend_ref
    assert cluster.server.job("hyperpod-ns-team-a", name)["spec"]["suspend"] is False
    assert len(cluster.server.jobs()) == 1


def test_cancelling_a_preempted_job_deletes_its_suspended_job(
    cluster, scientist, team_a, django_capture_on_commit_callbacks
):
    from scheduling.services import job_cancel

    job = submit(scientist, team_a)
    loop.admission_run(trigger="test")
    job.refresh_from_db()
    name = manifests.job_name(job)
    # Preempted: back to pending with its Job suspended on the cluster and no reference kept.
    Job.objects.filter(pk=job.pk).update(state=JobState.PENDING, backend_stop_pending=True, preemption_count=1)
    loop.carry_out()
    assert cluster.server.job("hyperpod-ns-team-a", name)["spec"]["suspend"] is True
    with django_capture_on_commit_callbacks(execute=True):
        job_cancel(user=scientist, pk=job.pk)
    assert cluster.server.job("hyperpod-ns-team-a", name) is None
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED and not job.backend_stop_pending
