"""A workload that a reservation refuses is not tried again while nothing its trial plan read has changed
(Scheduler.reservation_blocker, _refusal_reads): the instance types its outcome can depend on, their starts
and stops, the holds there, the rivals held there and the time. That must change no decision: the engine
decides as with every trial run afresh, on random clusters with several instance types, gangs, jobs without
a type (which link types through the heads that may run on either) and the reservation streams."""

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine.admission import Scheduler

from .helpers import with_and_without
from .test_invariants import scenarios
from .test_reservations import streams

COMMON = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def both(data: dict) -> tuple[dict, dict]:
    return with_and_without(Scheduler, "remember_refusals", data)


@COMMON
@given(scenarios(with_cluster=True), st.integers(20, 200))
def test_the_same_decisions_without_the_memory_on_several_types(data, until):
    data["until"] = until
    for w in data["workloads"]:
        w["duration"] = w["duration"] or 7  # reservations are made for work with a known end
    remembered, afresh = both(data)
    assert remembered == afresh


@COMMON
@given(streams())
def test_the_same_decisions_without_the_memory_on_reservation_streams(data):
    data["until"] = 300
    remembered, afresh = both(data)
    assert remembered == afresh


def _crowded(seed: int) -> dict:
    """Several instance types, each full, many teams whose small jobs fit the room left but would delay a
    gang's reservation, and a few reclaimers: refusals are asked again after every change elsewhere."""
    rng = random.Random(seed)
    types = [{"name": f"it{i}", "count": rng.randint(2, 4), "capacity": {"gpu": 8}} for i in range(3)]
    teams = [
        {
            "name": f"team{j}",
            "cohort": "c",
            "quota": {t["name"]: {"gpu": rng.choice([0, 4, 8])} for t in types},
            "reclaim_within_cohort": rng.choice(["Any", "Never"]),
        }
        for j in range(6)
    ]
    workloads = []
    for k in range(rng.randint(20, 50)):
        t = rng.choice(types)
        pods = rng.choice([1, 1, 1, t["count"]])
        workloads.append({
            "name": f"w{k}", "team": rng.choice(teams)["name"], "submit": rng.randint(0, 20), "pods": pods,
            "requests": {"gpu": rng.choice([1, 2, 8]) if pods == 1 else 8}, "priority": rng.randint(0, 1),
            "instance_type": rng.choice([t["name"], t["name"], None]), "duration": rng.choice([3, 10, 40]),
        })  # fmt: skip
    return {
        "cluster": {"instance_types": types},
        "policy": {"task_prioritization": rng.choice(["fcfs", "task-ranking"]), "idle_compute": "fair-share"},
        "teams": teams,
        "workloads": workloads,
        "until": 400,
    }


def test_the_same_decisions_without_the_memory_on_crowded_clusters():
    for seed in range(30):
        remembered, afresh = both(_crowded(seed))
        assert remembered == afresh, seed


def test_a_refusal_is_remembered_while_its_type_is_unchanged():
    """`big` (both p nodes) holds a reservation on p from 50, when `run` ends; `small` fits the free p node now
    but would delay it, and is refused (it is not its team's head: `next` waits on q before it; a planned
    head's trial plans every head again, and is not remembered). Asked again after work started and stopped
    on q, the refusal is not planned again; after a change on p it is."""
    import scheduling.engine.reservations as reservations
    from scheduling.engine.scenario import parse_scenario
    from scheduling.engine.simulator import Simulation

    data = {
        "cluster": {
            "instance_types": [
                {"name": "p", "count": 2, "capacity": {"gpu": 8}},
                {"name": "q", "count": 1, "capacity": {"gpu": 8}},
            ]
        },  # fmt: skip
        "teams": [
            {"name": "t0", "cohort": "c", "quota": {"p": {"gpu": 16}}},
            {"name": "t1", "cohort": "c", "quota": {"p": {"gpu": 0}, "q": {"gpu": 8}}},
        ],
        "workloads": [
            {"name": "run", "team": "t0", "requests": {"gpu": 8}, "instance_type": "p", "duration": 50},
            {
                "name": "big",
                "team": "t0",
                "pods": 2,
                "requests": {"gpu": 8},
                "instance_type": "p",
                "duration": 9,
                "submit": 1,
            },
            {"name": "small", "team": "t1", "requests": {"gpu": 1}, "instance_type": "p", "duration": 100, "submit": 2},
            {"name": "other", "team": "t1", "requests": {"gpu": 8}, "instance_type": "q", "duration": 100},
            {"name": "next", "team": "t1", "requests": {"gpu": 8}, "instance_type": "q", "duration": 5, "submit": 1},
        ],  # fmt: skip
        "until": 3,
    }
    sim = Simulation(parse_scenario(data))
    sim.run()
    s = sim.s
    small, other, run = s.jobs["small"], s.jobs["other"], s.jobs["run"]
    assert small.state == "pending" and other.state == "running" and small.team.queue.first().name == "next"
    trials = []
    plan = reservations.Planner.plan

    def counting(self, heads, extra=None, *args, **kwargs):
        if extra is not None:
            trials.append(extra.job.name)
        return plan(self, heads, extra, *args, **kwargs)

    def ask():
        return s.reservation_blocker(small, s.plan(small))

    reservations.Planner.plan = counting
    try:
        assert ask() is s.jobs["big"] and trials == []  # the simulation's last settle refused it already
        s.refusals.clear()
        assert ask() is s.jobs["big"] and trials == ["small"]
        assert ask() is s.jobs["big"] and trials == ["small"]  # nothing changed
        s.finish(other, s.now)  # q changes: the trial read nothing there
        s.submit(other)
        assert ask() is s.jobs["big"] and trials == ["small"]
        s.finish(run, s.now)  # p changes: planned again (run ends early, so big can start now)
        ask()
        assert trials == ["small", "small"]
        Scheduler.remember_refusals = False
        ask()
        ask()
        assert trials == ["small"] * 4
    finally:
        reservations.Planner.plan = plan
        Scheduler.remember_refusals = True
