"""The warm scheduler: passes fed by events decide as a cold run would, and lose nothing when they fail."""

import random
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from quotas.models import ComputeAllocation
from scheduling.models import ACTIVE_STATES, AdmissionRun, Job, JobState
from scheduling.services import job_cancel
from scheduling.warm import WarmScheduler, WarmState

pytestmark = pytest.mark.django_db


def state_of(job):
    return Job.objects.get(pk=job.pk).state


def assert_in_step(scheduler: WarmScheduler):
    """The warm state equals a state read fresh from the database."""
    fresh = WarmState.load(timezone.now())
    assert scheduler.state.compare(fresh) == 0
    assert set(scheduler.state.rows) == set(fresh.rows)


def test_a_warm_pass_admits_explains_and_follows_submits(scientist, team_a, submit):
    scheduler = WarmScheduler()
    first = submit(scientist, team_a, name="first", accelerators=8)
    result = scheduler.run_pass()
    assert result.rebuilt == "start" and result.admitted == 1
    assert state_of(first) == JobState.RUNNING  # started on the simulated cluster after the pass
    big = submit(scientist, team_a, name="big", accelerators=8, pods=2)
    result = scheduler.run_pass()
    assert result.rebuilt == "" and result.changed_jobs >= 1 and result.admitted == 0
    big.refresh_from_db()
    assert big.state == JobState.PENDING and "waiting for the scheduler" not in big.reason
    assert_in_step(scheduler)


def test_finishes_and_cancels_free_room_without_a_reload(scientist, team_a, submit, settings):
    settings.SIMULATED_FAILURE_RATE = 0.0
    scheduler = WarmScheduler()
    running = submit(scientist, team_a, name="running", accelerators=8, pods=2, expected_duration_s=10)
    scheduler.run_pass()
    queued = [submit(scientist, team_a, name=f"q{i}", accelerators=8, pods=2) for i in range(2)]
    scheduler.run_pass()
    assert [state_of(j) for j in queued] == [JobState.PENDING] * 2
    job_cancel(user=scientist, pk=queued[0].pk)  # a pending job leaves the queue
    Job.objects.filter(pk=running.pk).update(started_at=timezone.now() - timedelta(seconds=60))
    scheduler.last_observed = 0  # the pass asks the cluster, which reports the finish
    result = scheduler.run_pass()
    assert result.rebuilt == "" and result.admitted == 1
    assert state_of(running) == JobState.SUCCEEDED
    assert state_of(queued[1]) == JobState.RUNNING
    assert_in_step(scheduler)


def test_a_configuration_change_rereads_everything(scientist, admin_user, team_a, submit, p5):
    from quotas.services import allocations_update

    team_a.sharing = "DontLend"  # no borrowing: 16 GPUs wait for quota
    team_a.save()
    ComputeAllocation.objects.filter(team=team_a).update(accelerators=8)
    scheduler = WarmScheduler()
    job = submit(scientist, team_a, name="big", accelerators=8, pods=2)
    scheduler.run_pass()
    assert state_of(job) == JobState.PENDING
    allocations_update(team=team_a, allocations={"ml.p5.48xlarge": {"accelerators": 16}}, user=admin_user)
    scheduler.last_fingerprint = 0  # (a real change also wakes the scheduler with a "config" trigger)
    result = scheduler.run_pass()
    assert result.rebuilt == "configuration changed"
    assert state_of(job) == JobState.RUNNING
    assert_in_step(scheduler)


def test_a_pass_killed_midway_applies_nothing_and_the_next_pass_finishes(scientist, team_a, submit, monkeypatch):
    import scheduling.loop as loop

    scheduler = WarmScheduler()
    scheduler.run_pass()
    jobs = [submit(scientist, team_a, name=f"j{i}", accelerators=2) for i in range(4)]
    real = loop._update_reasons

    def killed(*args, **kwargs):
        assert Job.objects.filter(state=JobState.ADMITTED).count() == 4  # written, not committed
        raise RuntimeError("scheduler killed")

    monkeypatch.setattr(loop, "_update_reasons", killed)
    with pytest.raises(RuntimeError):
        scheduler.run_pass()
    assert [state_of(j) for j in jobs] == [JobState.PENDING] * 4
    assert scheduler.state is None and "scheduler killed" in AdmissionRun.objects.latest("pk").error
    monkeypatch.setattr(loop, "_update_reasons", real)
    result = scheduler.run_pass()
    assert result.rebuilt.startswith("after a failed pass") and result.admitted == 4
    assert [state_of(j) for j in jobs] == [JobState.RUNNING] * 4


def test_a_cold_run_behind_its_back_is_followed(scientist, other_scientist, team_a, team_b, submit):
    from scheduling.loop import admission_run

    scheduler = WarmScheduler()
    borrower = submit(scientist, team_a, name="borrower", accelerators=8, pods=2)
    scheduler.run_pass()
    assert state_of(borrower) == JobState.RUNNING
    owner = submit(other_scientist, team_b, name="owner", accelerators=4)
    admission_run(trigger="cold")  # preempts the borrower and admits the owner
    assert state_of(owner) == JobState.RUNNING and state_of(borrower) == JobState.PENDING
    result = scheduler.run_pass()
    assert result.rebuilt == ""
    assert_in_step(scheduler)


def test_random_traffic_keeps_the_warm_state_equal_to_a_fresh_one(
    scientist, other_scientist, team_a, team_b, submit, priorities, settings
):
    settings.SIMULATED_FAILURE_RATE = 0.2
    rng = random.Random(11)
    scheduler = WarmScheduler()
    for round_ in range(8):
        for i in range(5):
            user, team = rng.choice([(scientist, team_a), (other_scientist, team_b)])
            size, priority = rng.choice([1, 2, 4, 8]), rng.choice(["high", "low", None])
            submit(user, team, name=f"r{round_}-{i}", accelerators=size, priority_class=priority,
                   expected_duration_s=rng.choice([5, 50]))  # fmt: skip
        pending = list(Job.objects.filter(state=JobState.PENDING))
        for job in rng.sample(pending, k=min(2, len(pending))):
            job_cancel(user=scientist if job.team_id == team_a.pk else other_scientist, pk=job.pk)
        Job.objects.filter(state=JobState.RUNNING, expected_duration_s=5).update(
            started_at=timezone.now() - timedelta(seconds=30)
        )
        scheduler.last_observed = 0
        scheduler.run_pass()
        assert_in_step(scheduler)
    assert Job.objects.filter(state__in=ACTIVE_STATES).exists()
    assert Job.objects.filter(state__in=[JobState.SUCCEEDED, JobState.FAILED]).count() >= 3  # (which fail: job ids)


def test_beats_cluster_tick_observes_the_cluster_only_while_no_scheduler_leads(settings, monkeypatch):
    from django.db import connection

    from scheduling.tasks import cluster_tick
    from scheduling.warm import Leadership

    if connection.vendor != "postgresql":
        pytest.skip("leadership by advisory lock needs PostgreSQL")
    settings.ADMISSION_SCHEDULER = "process"
    observed, carried = [], []
    monkeypatch.setattr("scheduling.loop.cluster_sync", lambda **kwargs: observed.append(1) or 0)
    monkeypatch.setattr("scheduling.loop.carry_out", lambda: carried.append(1))
    cluster_tick(retry_starts=True)
    assert (observed, carried) == ([1], [1])  # nobody else observes: beat does
    leadership = Leadership()
    assert leadership.try_take()
    try:
        cluster_tick(retry_starts=True)  # the leading scheduler's passes observe; beat still retries starts
        assert (observed, carried) == ([1], [1, 1])
    finally:
        leadership.release()


def test_a_job_started_by_the_scheduler_process_wakes_that_process_at_its_end_without_a_celery_task(
    settings, monkeypatch
):
    from scheduling import loop
    from scheduling.backends.simulated import SimulatedCluster
    from scheduling.tasks import cluster_tick

    settings.CELERY_TASK_ALWAYS_EAGER = False
    queued = []
    monkeypatch.setattr(cluster_tick, "apply_async", lambda **kwargs: queued.append(kwargs))
    monkeypatch.setattr(loop, "_alarms", None)
    SimulatedCluster._wake_up_at(time.time() + 0.05)  # a web or worker process: a Celery task wakes the scheduler
    assert len(queued) == 1
    loop.serve_cluster_wakeups_here()  # the scheduler process
    SimulatedCluster._wake_up_at(time.time() + 0.05)
    assert len(queued) == 1
    for _ in range(3):  # other wake-ups waiting may come first
        if "cluster" in loop.wait_for_wake(30):  # at the job's end: the pass observes the cluster
            break
    else:
        raise AssertionError("the job's end did not wake the scheduler")
    assert loop._next_alarm() is None


def test_the_scheduler_process_moves_its_state_out_of_the_collectors_sight_when_it_reads_it_whole(
    scientist, team_a, submit
):
    import gc

    submit(scientist, team_a, name="one")
    gc.unfreeze()
    try:
        WarmScheduler(carry_out=lambda: None).run_pass()  # elsewhere (tests, cold runs): the collector as it is
        assert gc.get_freeze_count() == 0
        scheduler = WarmScheduler(carry_out=lambda: None, freeze_state=True)
        scheduler.run_pass()  # the state read whole: frozen
        frozen = gc.get_freeze_count()
        assert frozen > 0
        submit(scientist, team_a, name="two")
        scheduler.run_pass()  # followed from events: nothing frozen anew (frozen objects freed leave the count)
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_a_state_read_whole_is_built_with_the_collector_paused_and_it_is_resumed_after(
    scientist, team_a, submit, monkeypatch
):
    import gc

    from scheduling import engine

    build, seen = engine.build_scheduler, []

    def watched(snapshot):
        seen.append(gc.isenabled())
        return build(snapshot)

    monkeypatch.setattr(engine, "build_scheduler", watched)
    submit(scientist, team_a, name="one")
    assert gc.isenabled()
    WarmScheduler(carry_out=lambda: None).run_pass()
    assert seen == [False] and gc.isenabled()
    gc.disable()  # a caller that had it off finds it off
    try:
        WarmScheduler(carry_out=lambda: None).run_pass()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_state_a_whole_read_replaces_is_collected_between_passes_when_idle_or_at_the_latest_after_a_wait(
    scientist, team_a, submit, monkeypatch
):
    import gc

    from scheduling import warm

    submit(scientist, team_a, name="one")
    gc.unfreeze()
    gc.collect()
    try:
        scheduler = WarmScheduler(carry_out=lambda: None, freeze_state=True)
        scheduler.run_pass()
        assert scheduler.collect_garbage() is not None  # whatever was there before the first read
        one_state = gc.get_freeze_count()
        for _ in range(3):  # three states read whole, each replacing the last: all frozen, none collected
            scheduler.drop("test")
            scheduler.run_pass()
        assert scheduler.garbage_since is not None
        assert gc.get_freeze_count() > one_state + 100
        assert scheduler.collect_garbage(idle=False) is None  # busy, and not waiting for long: later
        monkeypatch.setattr(warm, "GARBAGE_WAIT_S", 0.0)
        assert scheduler.collect_garbage(idle=False) is not None  # busy, but it waited long enough
        assert scheduler.garbage_since is None and scheduler.collect_garbage() is None
        assert gc.get_freeze_count() <= one_state + 100  # the replaced states are gone, the one in use frozen
        assert scheduler.state is not None and scheduler.run_pass().rebuilt == ""
    finally:
        gc.unfreeze()


def test_job_rows_read_in_binary_equal_the_orms_values(scientist, team_a, submit):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from scheduling.snapshot import ROW_FIELDS, binary_values

    submit(scientist, team_a, name="waits", accelerators=2)
    job = submit(scientist, team_a, name="runs", accelerators=2, pods=2)
    Job.objects.filter(pk=job.pk).update(
        state=JobState.RUNNING, placement=[3, 3], admitted_at=timezone.now(), expected_duration_s=None
    )
    query = Job.objects.order_by("submitted_at", "pk")
    assert connection.vendor == "postgresql"  # the binary read is PostgreSQL's (elsewhere: values_list itself)
    with CaptureQueriesContext(connection) as captured:
        binary = binary_values(query, ROW_FIELDS)
    assert len(captured.captured_queries) == 1  # seen as any query is (query counts, debug tools)
    assert binary == list(query.values_list(*ROW_FIELDS))
    assert binary[-1][ROW_FIELDS.index("placement")] == [3, 3]
    assert binary[-1][ROW_FIELDS.index("admitted_at")].tzinfo is not None
    # more ids than PostgreSQL binds in one statement (a burst of events): read as Django reads them
    many = Job.objects.filter(pk__in=range(1, 70_001)).order_by("submitted_at", "pk")
    assert binary_values(many, ROW_FIELDS) == binary


def test_a_pass_that_refreshes_every_reason_leaves_that_time_out_of_its_settles_budget(scientist, team_a, submit):
    for i in range(4):
        submit(scientist, team_a, name=f"small-{i}", accelerators=2)
    scheduler = WarmScheduler(carry_out=lambda: None)
    scheduler.explain_cost = 3600.0  # as if refreshing every reason took an hour: no budget left to settle
    result = scheduler.run_pass()  # read whole: every reason is refreshed
    assert result.admitted == 1 and result.cut  # a pass decides at least once, then stops
    assert scheduler.explain_cost < 60  # measured afresh
    result = scheduler.run_pass()  # reasons refreshed a moment ago: the whole budget is the settle's
    assert result.admitted == 3 and not result.cut


def test_a_pass_past_its_budget_leaves_refreshing_every_reason_to_the_next_pass_but_not_for_long(
    scientist, team_a, submit, monkeypatch
):
    from scheduling import warm

    submit(scientist, team_a, name="everything", accelerators=8, pods=2)  # every node, admitted first
    waits = submit(scientist, team_a, name="waits", accelerators=8)
    scheduler = WarmScheduler(carry_out=lambda: None)
    scheduler.run_pass()
    assert Job.objects.get(pk=waits.pk).state == JobState.PENDING
    Job.objects.filter(pk=waits.pk).update(reason="stale")
    monkeypatch.setattr(warm, "SETTLE_BUDGET_S", -1.0)  # every pass is past its budget
    scheduler.drop("test")
    scheduler.run_pass()  # read whole: every reason is due, but this pass has no time left
    assert Job.objects.get(pk=waits.pk).reason == "stale" and scheduler.explain_due_since is not None
    monkeypatch.setattr(warm, "SETTLE_BUDGET_S", 0.6)
    scheduler.run_pass()  # the next pass, within its budget, refreshes them
    assert Job.objects.get(pk=waits.pk).reason not in ("stale", "") and scheduler.explain_due_since is None
    Job.objects.filter(pk=waits.pk).update(reason="stale")
    monkeypatch.setattr(warm, "SETTLE_BUDGET_S", -1.0)
    scheduler.drop("test")
    scheduler.run_pass()
    assert Job.objects.get(pk=waits.pk).reason == "stale"
    scheduler.explain_due_since -= warm.EXPLAIN_ALL_SECONDS  # due for that long: refreshed even past the budget
    scheduler.run_pass()
    assert Job.objects.get(pk=waits.pk).reason not in ("stale", "")


def test_the_publication_pace_outlives_a_state_read_whole_but_not_a_start_or_a_configuration_change(
    scientist, team_a, submit
):
    from scheduling.models import PublishedPlan

    def published() -> int:  # the newest publication (only the last few are kept)
        return PublishedPlan.objects.order_by("-pk").values_list("pk", flat=True).first() or 0

    submit(scientist, team_a, name="one", accelerators=8, pods=2)
    submit(scientist, team_a, name="two", accelerators=8)
    scheduler = WarmScheduler(carry_out=lambda: None)
    scheduler.run_pass()  # start: published at once
    first = published()
    assert first >= 1
    scheduler.drop("after a failed pass (test)")
    scheduler.run_pass()  # read whole again a moment later (as the consistency check does): paced, not again
    assert published() == first and scheduler.pace.pending_change
    scheduler.drop("configuration changed")
    scheduler.run_pass()  # what was published no longer holds: at once
    second = published()
    assert second > first
    scheduler.drop("takeover")
    scheduler.run_pass()
    assert published() > second
