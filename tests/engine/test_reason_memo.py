"""Identical workloads of a team share one explanation; sharing must never change what a workload is told."""

import random

from scheduling.engine import InstanceType, Policy, Snapshot, Team, Workload, _reasons, build_scheduler
from scheduling.engine.explain import explain
from scheduling.engine.queues import PENDING


def test_shared_explanations_equal_individual_ones():
    rng = random.Random(7)
    types = [InstanceType("p5", {"gpu": 8, "cpu": 192, "memory": 2048}, 2), InstanceType("g5", {"gpu": 1, "cpu": 8}, 4)]
    teams = [
        Team(f"t{i}", quota={"p5": {"gpu": 4 * i, "cpu": 96 * i, "memory": 1024 * i}, "g5": {"gpu": i, "cpu": 8 * i}},
             borrow_limit_pct=rng.choice([None, 50]), sharing=rng.choice(["LendAndBorrow", "Lend", "DontLend"]))
        for i in range(1, 4)
    ]  # fmt: skip
    workloads = [
        Workload(f"w{n}", f"t{rng.randint(1, 3)}", {"gpu": rng.choice([1, 2, 4, 8]), "cpu": 8}, pods=rng.choice([1, 2]),
                 priority=rng.choice([0, 50, 100]), submit=n, instance_type=rng.choice([None, "p5", "g5"]))
        for n in range(300)
    ]  # fmt: skip
    snapshot = Snapshot(types, teams, workloads, Policy("task-ranking", "fair-share"), now=400)
    s = build_scheduler(snapshot)
    s.wake_all()
    s.settle(snapshot.now)
    pending = [job for job in s.jobs.values() if job.state == PENDING]
    assert len(pending) > 100
    assert _reasons(s) == {job.name: explain(s, job) for job in pending}
