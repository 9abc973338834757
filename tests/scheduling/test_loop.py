"""The admission loop end to end on the database: admit, explain, preempt, start on the cluster, finish."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.backends.base import ClusterUnreachable
from scheduling.backends.simulated import SimulatedCluster, fate
from scheduling.loop import UNREACHABLE, admission_run, cluster_sync
from scheduling.models import AdmissionRun, Job, JobState
from scheduling.warm import WarmScheduler

pytestmark = pytest.mark.django_db


def states(*jobs):
    return [Job.objects.get(pk=j.pk).state for j in jobs]


def test_a_job_within_quota_is_admitted_started_and_recorded(scientist, team_a, submit):
    job = submit(scientist, team_a, accelerators=4, expected_duration_s=60)
    run = admission_run(trigger="test")
    job.refresh_from_db()
    assert (run.admitted, run.preempted, run.error) == (1, 0, "")
    assert job.state == JobState.RUNNING  # the simulated cluster starts it at once
    assert job.assigned_instance_type.name == "ml.p5.48xlarge"
    assert job.placement == [0] or job.placement == [1]
    assert not job.borrowed
    assert job.backend_ref.startswith("sim/hyperpod-ns-team-a/train-")
    transitions = [(e.from_state, e.to_state) for e in job.events.all()]
    assert transitions == [("", "pending"), ("pending", "admitted"), ("admitted", "running")]
    assert AdmissionRun.objects.count() == 1


def test_a_job_that_cannot_fit_waits_with_the_engines_reason(scientist, team_a, submit):
    big = submit(scientist, team_a, name="big", accelerators=8, pods=2)
    waiting = submit(scientist, team_a, name="waits", accelerators=8)
    admission_run()
    big.refresh_from_db()
    waiting.refresh_from_db()
    assert big.state == JobState.RUNNING and big.borrowed  # team-a's quota is 8 GPUs; it borrows the rest
    assert waiting.state == JobState.PENDING
    assert waiting.reason and "waiting for the scheduler" not in waiting.reason
    assert AdmissionRun.objects.get().pending == 1


def test_reclaim_preempts_the_borrower_and_requeues_it_with_a_reason(
    scientist, other_scientist, team_a, team_b, submit
):
    borrower = submit(scientist, team_a, name="borrower", accelerators=8, pods=2)
    admission_run()
    assert states(borrower) == [JobState.RUNNING]
    owner = submit(other_scientist, team_b, name="owner", accelerators=4)
    run = admission_run()
    borrower.refresh_from_db()
    owner.refresh_from_db()
    assert run.preempted == 1
    assert owner.state == JobState.RUNNING
    assert borrower.state == JobState.PENDING and borrower.preemption_count == 1
    assert borrower.assigned_instance_type is None and borrower.placement is None
    events = list(borrower.events.values_list("from_state", "to_state", "reason"))
    assert events[-2][:2] == ("running", "preempted")
    assert f"job #{owner.pk} owner of team-b" in events[-2][2] and "reclaim" in events[-2][2]
    assert events[-1][:2] == ("preempted", "pending")


def test_the_simulated_cluster_finishes_jobs_after_their_scaled_duration(scientist, team_a, submit, settings):
    settings.SIMULATED_TIME_SCALE = 0.5
    settings.SIMULATED_FAILURE_RATE = 0.0
    job = submit(scientist, team_a, expected_duration_s=100)
    admission_run()
    job.refresh_from_db()
    assert cluster_sync() == 0
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(seconds=51))
    assert cluster_sync() == 1
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    assert job.finished_at - job.started_at == timedelta(seconds=50)


def test_simulated_failures_are_a_deterministic_fraction(settings):
    settings.SIMULATED_FAILURE_RATE = 0.1

    class FakeJob:
        expected_duration_s = 100

        def __init__(self, pk):
            self.pk = pk

    outcomes = [fate(FakeJob(pk))[0] for pk in range(2000)]
    again = [fate(FakeJob(pk))[0] for pk in range(2000)]
    assert outcomes == again
    assert 140 < outcomes.count("failed") < 260
    settings.SIMULATED_FAILURE_RATE = 0.0
    assert all(fate(FakeJob(pk))[0] == "succeeded" for pk in range(200))


def test_a_finish_lets_the_next_job_in(scientist, team_a, submit, settings, django_capture_on_commit_callbacks):
    settings.SIMULATED_FAILURE_RATE = 0.0
    first = submit(scientist, team_a, name="first", accelerators=8, pods=2, expected_duration_s=10)
    second = submit(scientist, team_a, name="second", accelerators=8, expected_duration_s=10)
    admission_run()
    assert states(first, second) == [JobState.RUNNING, JobState.PENDING]
    Job.objects.filter(pk=first.pk).update(started_at=timezone.now() - timedelta(seconds=11))
    with django_capture_on_commit_callbacks(execute=True):  # the finish asks for a run (eager Celery)
        cluster_sync()
    assert states(first, second) == [JobState.SUCCEEDED, JobState.RUNNING]
    assert AdmissionRun.objects.filter(trigger="finish").count() == 1


class Unreachable(SimulatedCluster):
    def start(self, job, **kwargs):
        raise ClusterUnreachable("connection refused")


def test_an_unreachable_cluster_loses_nothing(scientist, team_a, submit, monkeypatch):
    job = submit(scientist, team_a)
    monkeypatch.setattr("scheduling.loop.get_backend", Unreachable)
    admission_run()
    job.refresh_from_db()
    assert job.state == JobState.ADMITTED and job.reason == UNREACHABLE and job.backend_ref == ""
    monkeypatch.setattr("scheduling.loop.get_backend", SimulatedCluster)
    admission_run()
    job.refresh_from_db()
    assert job.state == JobState.RUNNING and job.backend_ref


def test_a_run_killed_midway_applies_nothing_and_the_next_run_finishes(scientist, team_a, submit, monkeypatch):
    jobs = [submit(scientist, team_a, name=f"j{i}", accelerators=2) for i in range(4)]
    import scheduling.loop as loop

    real_reasons = loop._update_reasons

    def dies_after_the_admissions_are_written(*args, **kwargs):
        assert Job.objects.filter(state=JobState.ADMITTED).count() == 4  # written, not yet committed
        raise RuntimeError("worker killed")

    monkeypatch.setattr(loop, "_update_reasons", dies_after_the_admissions_are_written)
    run = admission_run()
    assert "worker killed" in run.error and run.admitted == 0
    assert states(*jobs) == [JobState.PENDING] * 4
    assert all(j.events.count() == 1 for j in jobs)
    monkeypatch.setattr(loop, "_update_reasons", real_reasons)
    admission_run()
    assert states(*jobs) == [JobState.RUNNING] * 4


def test_a_cancelled_running_job_is_stopped_and_frees_its_place(
    scientist, team_a, submit, django_capture_on_commit_callbacks
):
    from scheduling.services import job_cancel

    job = submit(scientist, team_a, accelerators=8, pods=2)
    waiting = submit(scientist, team_a, name="waiting", accelerators=8)
    admission_run()
    with django_capture_on_commit_callbacks(execute=True):
        job_cancel(user=scientist, pk=job.pk)
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED and job.finished_at and not job.backend_stop_pending
    assert states(waiting) == [JobState.RUNNING]  # the cancel asked for a run


def test_the_simulated_cluster_reports_its_own_start_time_however_late_the_portal_looks(
    scientist, team_a, submit, settings
):
    settings.SIMULATED_TIME_SCALE = 1.0
    settings.SIMULATED_FAILURE_RATE = 0.0
    job = submit(scientist, team_a, expected_duration_s=10)
    WarmScheduler(carry_out=lambda: None).run_pass()  # admitted; the cluster is told later
    started = timezone.now() - timedelta(seconds=60)
    ref = f"sim/{team_a.namespace}/{job.name}-{job.pk}-a0@{started.timestamp():.3f}"
    Job.objects.filter(pk=job.pk).update(backend_ref=ref)  # started a minute ago; nobody looked since
    assert cluster_sync() == 1
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    assert abs((job.started_at - started).total_seconds()) < 0.001
    assert job.finished_at - job.started_at == timedelta(seconds=10)
    transitions = list(job.events.order_by("pk").values_list("from_state", "to_state"))
    assert transitions[-2:] == [("admitted", "running"), ("running", "succeeded")]
