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


def test_a_preemption_records_the_state_the_database_holds_not_the_schedulers_copy(scientist, team_a, submit):
    """The scheduler's copy of a job said admitted while the cluster had started it since: the preemption's
    event read "admitted -> preempted" right after "admitted -> running" on the job's timeline."""
    from django.utils import timezone

    from scheduling import engine
    from scheduling.loop import _preempt_all
    from scheduling.snapshot import load_rows

    job = submit(scientist, team_a, accelerators=2)
    Job.objects.filter(pk=job.pk).update(state=JobState.ADMITTED)
    (row,) = load_rows(ids=[job.pk])  # the scheduler's copy: admitted
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING)  # the cluster started it since
    events = []
    done = _preempt_all([engine.Preemption(str(job.pk), "", "priority")], {str(job.pk): row}, timezone.now(), events)
    assert done == [job.pk]
    assert (events[0].from_state, events[0].to_state) == (JobState.RUNNING, JobState.PREEMPTED)


@pytest.mark.django_db(transaction=True)  # the pass's lock is another session's, as in production
def test_the_carrier_records_what_it_started_running_while_a_pass_holds_the_loops_lock(
    scientist, team_a, submit, settings
):
    """The carrier marks what it started running under the rows' own locks: a pass (holding the loop's lock)
    never waits for it, and it never leaves its starts unrecorded because a pass was running."""
    import psycopg
    from django.db import connection

    from scheduling.loop import LOCK_KEY

    settings.CELERY_TASK_ALWAYS_EAGER, settings.ADMISSION_SCHEDULER = False, "process"  # nothing runs inline
    job = submit(scientist, team_a, accelerators=2)
    WarmScheduler(carry_out=lambda: None).run_pass()  # admitted, not started yet
    job.refresh_from_db()
    assert job.state == JobState.ADMITTED
    s = connection.settings_dict
    url = f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    with psycopg.connect(url) as other:  # a pass in another process, inside its transaction
        other.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        carry_out()
        job.refresh_from_db()
        assert job.state == JobState.RUNNING and job.started_at is not None
        assert job.events.filter(to_state=JobState.RUNNING).count() == 1
        other.rollback()
