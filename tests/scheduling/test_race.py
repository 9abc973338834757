"""Several admission loops at once, each with its own database connection, never over-admit."""

import random
import threading
from collections import defaultdict

import pytest
from django.db import connection
from django.utils import timezone

from quotas.models import ClusterPolicy
from scheduling.loop import admission_run
from scheduling.models import ACTIVE_STATES, AdmissionRun, Job, JobState

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

LOOPS = 4
ROUNDS = 12


def node_load():
    """GPUs in use per (instance type, node), from the placements of admitted and running jobs."""
    load = defaultdict(int)
    for job in Job.objects.filter(state__in=ACTIVE_STATES):
        for node in job.placement:
            load[(job.assigned_instance_type_id, node)] += job.accelerators
    return load


def race(loops: int, late_submit) -> list:
    """Start `loops` runs together; every other thread first submits a high-priority job, so the runs read
    different snapshots and would place different jobs on the same free GPUs if nothing serialized them."""
    barrier = threading.Barrier(loops)
    errors = []

    def one(k):
        try:
            barrier.wait()
            if k % 2:
                late_submit(k)
            run = admission_run(trigger="race")
            if run.error:
                errors.append(run.error)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(k,)) for k in range(loops)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return errors


def test_racing_loops_never_admit_against_the_same_capacity(
    scientist, other_scientist, team_a, team_b, submit, p5, priorities, monkeypatch
):
    ClusterPolicy.objects.update_or_create(pk=1, defaults={"task_prioritization": "task-ranking"})
    monkeypatch.setattr("scheduling.loop._enqueue", lambda trigger: None)  # only the racing loops admit
    rng = random.Random(7)
    capacity = p5.accelerators
    admitted_total = 0
    for round_ in range(ROUNDS):
        for i in range(6):
            user, team = rng.choice([(scientist, team_a), (other_scientist, team_b)])
            submit(user, team, name=f"r{round_}-{i}", accelerators=rng.choice([1, 2, 4, 8]), vcpus=1)

        def late_submit(k, round_=round_):
            size = rng.choice([4, 8])
            submit(scientist, team_a, name=f"late{round_}-{k}", accelerators=size, priority_class="high", vcpus=1)

        assert race(LOOPS, late_submit) == []
        load = node_load()
        assert all(gpus <= capacity for gpus in load.values()), load
        for job in Job.objects.filter(state__in=ACTIVE_STATES):  # no job admitted twice
            assert job.events.filter(to_state=JobState.ADMITTED).count() - job.preemption_count == 1
        admitted_total += sum(AdmissionRun.objects.filter(trigger="race").values_list("admitted", flat=True))
        AdmissionRun.objects.filter(trigger="race").delete()
        running = list(Job.objects.filter(state=JobState.RUNNING))
        for job in rng.sample(running, k=len(running) // 2):  # some finish, making room for the next round
            Job.objects.filter(pk=job.pk).update(state=JobState.SUCCEEDED, finished_at=timezone.now())
    assert admitted_total >= ROUNDS  # the loops did real work, not just waited on each other
