"""A failed victim search is remembered and not run again while nothing it read has changed
(preemption.find_victims); whether a placement would succeed, asked without placing over every node
(NodePool.can_place), and the gangs that fit not even on empty nodes (NodePool.pods_room_empty). None may
change a decision: the cache is checked against the engine without it on many random scenarios (hypothesis),
as in test_invariants, and can_place against place itself."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine.placement import NodePool
from scheduling.engine.scenario import parse_scenario
from scheduling.engine.simulator import Simulation

from .test_invariants import scenarios

COMMON = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(data, cached: bool):
    sim = Simulation(parse_scenario(data))
    if not cached:
        sim.s.no_victims = _Forgetful()
    return sim.run(), sim.s.searches


class _Forgetful(dict):
    """A cache that never keeps anything: every search runs."""

    def __setitem__(self, key, value):
        pass


@st.composite
def varied(draw, with_cluster: bool):
    """test_invariants' scenarios, with the within-team and borrow-within policies varied too (the search key
    holds the submit time only where equal-priority newer work may be evicted)."""
    data = draw(scenarios(with_cluster))
    for team in data["teams"]:
        team["within_team"] = draw(st.sampled_from([None, None, "LowerPriority", "LowerOrNewerEqualPriority"]))
        team["borrow_within_cohort"] = draw(st.sampled_from(["Never", "LowerPriority"]))
    return data


@COMMON
@given(varied(with_cluster=False))
def test_the_same_decisions_without_the_cache_quota_only(data):
    assert run(data, True)[0] == run(data, False)[0]


@COMMON
@given(varied(with_cluster=True))
def test_the_same_decisions_without_the_cache_on_nodes(data):
    assert run(data, True)[0] == run(data, False)[0]


def test_a_failed_search_is_not_run_again_while_its_instance_type_is_unchanged():
    """t0 waits for 8 GPUs of p, where the whole cohort has 4: its search fails. t1's work on q finishes at
    1, 2, 3 and 4 and wakes t0 each time; p is unchanged, so the search is not run again."""
    data = {
        "teams": [
            {"name": "t0", "cohort": "c", "quota": {"p": {"gpu": 4}}},
            {"name": "t1", "cohort": "c", "quota": {"q": {"gpu": 4}}},
        ],
        "workloads": [
            {"name": "big", "team": "t0", "requests": {"gpu": 8}, "instance_type": "p"},
            *({"name": f"w{i}", "team": "t1", "requests": {"gpu": 4}, "duration": 1} for i in range(4)),
        ],
        "until": 5,
    }
    out, searches = run(data, True)
    uncached, runs = run(data, False)
    assert out == uncached
    assert out["workloads"]["big"]["state"] == "pending"
    assert searches[0] < runs[0] and searches[1] >= 4, (searches, runs)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_can_place_answers_as_place_does(data):
    resources = ["gpu", "cpu", "memory"]
    capacity = [float(data.draw(st.sampled_from([1, 2, 4, 8]))), float(data.draw(st.sampled_from([4, 8, 16]))), 32.0]
    count = data.draw(st.integers(1, 6))
    pool = NodePool(capacity, count, resources)
    for _ in range(data.draw(st.integers(0, 6))):
        node = data.draw(st.integers(0, count - 1))
        used = [data.draw(st.integers(0, int(c))) * 1.0 for c in capacity]
        if all(pool.free[node][r] >= used[r] for r in range(3)):
            pool.take([node], used, (0, 1, 2))
    extra = {}
    for _ in range(data.draw(st.integers(0, 3))):
        node = data.draw(st.integers(0, count - 1))
        extra[node] = [data.draw(st.sampled_from([-1.0, 0.0, 0.1, 0.5, 1.0, 4.0])) for _ in resources]
    per_pod = [data.draw(st.sampled_from([0.0, 0.3, 0.5, 1.0, 2.0, 3.0])) for _ in resources]
    per_pod[0] = per_pod[0] or 1.0
    nz = tuple(r for r, amount in enumerate(per_pod) if amount > 0)
    pods = data.draw(st.integers(1, 12))
    placed = pool.place(per_pod, nz, pods, extra)
    assert pool.can_place(per_pod, nz, pods, extra) == (placed is not None)
    if pool.pods_room_empty(per_pod, nz) < pods:  # (in the engine `extra` gives back only what runs there)
        assert pool.place(per_pod, nz, pods) is None
