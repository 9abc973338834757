"""Starting and stopping on the cluster: claims never strand a job."""

import pytest

from scheduling.backends.simulated import SimulatedCluster
from scheduling.loop import carry_out
from scheduling.models import Job, JobState
from scheduling.warm import WarmScheduler

pytestmark = pytest.mark.django_db


def test_a_job_preempted_while_it_starts_is_started_again_at_once_when_readmitted(
    scientist, team_a, submit, monkeypatch
):
    job = submit(scientist, team_a, accelerators=2)
    WarmScheduler(carry_out=lambda: None).run_pass()  # admitted, not started yet
    real_start = SimulatedCluster.start

    def preempted_meanwhile(self, job, **kwargs):
        Job.objects.filter(pk=job.pk).update(state=JobState.PENDING, backend_stop_pending=True)
        return real_start(self, job, **kwargs)

    monkeypatch.setattr(SimulatedCluster, "start", preempted_meanwhile)
    carry_out()
    job.refresh_from_db()
    assert job.state == JobState.PENDING and job.backend_ref == ""  # no claim left behind
    monkeypatch.setattr(SimulatedCluster, "start", real_start)
    Job.objects.filter(pk=job.pk).update(state=JobState.ADMITTED)  # admitted again
    carry_out()
    job.refresh_from_db()
    assert job.state == JobState.RUNNING and job.backend_ref.startswith("sim/")
