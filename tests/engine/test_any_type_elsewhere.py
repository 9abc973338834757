"""A workload that may run on any of its team's instance types (t0 borrows on both; p comes first in its
quota), refused by a reservation on the one it prefers, starts on the next that fits now where it delays
nobody (Scheduler._elsewhere). Before, it waited: only its first fitting type was ever asked."""

from scheduling.engine.simulator import simulate_scenario


def scenario(q_nodes: int) -> dict:
    return {
        "cluster": {
            "instance_types": [
                {"name": "p", "count": 1, "capacity": {"gpu": 8}},
                {"name": "q", "count": q_nodes, "capacity": {"gpu": 8}},
            ]
        },  # fmt: skip
        "teams": [
            {"name": "t0", "cohort": "c", "quota": {"p": {"gpu": 0}, "q": {"gpu": 0}}},  # borrows on either
            {"name": "t1", "cohort": "c", "quota": {"p": {"gpu": 8}}},
            {"name": "t2", "cohort": "c", "quota": {"q": {"gpu": 8}}},  # lends q
        ],
        "workloads": [
            {"name": "run", "team": "t1", "requests": {"gpu": 4}, "instance_type": "p", "duration": 50},
            {"name": "big", "team": "t1", "requests": {"gpu": 8}, "instance_type": "p", "duration": 10, "submit": 1},
            {"name": "any", "team": "t0", "requests": {"gpu": 4}, "duration": 100, "submit": 2},
        ],
        "until": 200,
    }


def test_refused_on_its_first_type_it_starts_on_the_next():
    out = simulate_scenario(scenario(q_nodes=1))["workloads"]
    assert out["any"]["instance_type"] == "q" and out["any"]["admitted_at"] == 2  # not on p: big is reserved there
    assert out["big"]["admitted_at"] == 50  # when `run` ends, as reserved


def test_with_nowhere_else_it_waits_behind_the_reservation():
    out = simulate_scenario(scenario(q_nodes=0))["workloads"]
    assert out["big"]["admitted_at"] == 50
    assert out["any"]["admitted_at"] == 60 and out["any"]["instance_type"] == "p"  # after big's run
