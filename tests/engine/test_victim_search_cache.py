"""A failed victim search is remembered and not run again while nothing it read has changed
(preemption.find_victims); whether a placement would succeed, asked without placing over every node
(NodePool.can_place), and the gangs that fit not even on empty nodes (NodePool.pods_room_empty). None may
change a decision: the cache is checked against the engine without it on many random scenarios (hypothesis),
as in test_invariants, and can_place against place itself."""

import pytest
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
    from scheduling.engine.admission import Scheduler

    Scheduler.narrow_wakes = False  # every stop offers t0 again (as before blocked teams were woken by type)
    try:
        out, searches = run(data, True)
        uncached, runs = run(data, False)
    finally:
        Scheduler.narrow_wakes = True
    assert out == uncached
    assert out["workloads"]["big"]["state"] == "pending"
    assert searches[0] < runs[0] and searches[1] >= 4, (searches, runs)
    # Woken by type, t0 (waiting for p) is not even offered again when work on q stops: one search in all.
    narrow, searched = run(data, True)
    assert narrow == out and searched[1] == 0 and searched[0] <= searches[0], searched


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


def _every_borrowers_work(s, job, f, reason):
    """The candidates as listed before borrowers were filtered: every running job of every other cohort member
    borrowing on `f` in one of the claimant's resources (preemption._candidates without the filters)."""
    book = job.team.book
    lower_only = reason == "priority" or job.team.reclaim == "LowerPriority"
    out = []
    for other in book.cohort.members:
        if other is book or not other.borrowing(f, job.nz):
            continue
        for victim in s.teams[other.idx].running[f]:
            if victim in s.protected or (lower_only and victim.priority >= job.priority):
                continue
            if any(victim.total[r] > 0 for r in job.nz):
                out.append((victim, reason))
    return out


def _contended(seed: int) -> dict:
    """A cohort under fair share where most teams borrow and gangs wait: many fair-share searches, with
    borrowers above and below the claimant's share and work its team could or could not give up."""
    import random

    rng = random.Random(seed)
    types = [{"name": f"t{i}", "count": rng.randint(2, 6), "capacity": {"gpu": rng.choice([4, 8]), "memory": 64}}
             for i in range(rng.randint(1, 2))]  # fmt: skip
    teams = [{"name": f"team{j}", "fair_share_weight": rng.choice([0, 1, 1, 2, 3]),
              "preempt_team_tasks": rng.choice(["Never", "LowerPriority"]),
              "borrow_within_cohort": rng.choice(["Never", "LowerPriority"]),
              "quota": {t["name"]: {"gpu": rng.randint(0, t["capacity"]["gpu"] * t["count"] // 2)} for t in types}}
             for j in range(rng.randint(2, 6))]  # fmt: skip
    workloads = [{"name": f"w{k}", "team": rng.choice(teams)["name"], "priority": rng.randint(0, 2),
                  "submit": rng.randint(0, 40), "pods": rng.choice([1, 1, 2, 4]),
                  "requests": {"gpu": rng.randint(1, 8), **({"memory": 16} if rng.random() < .5 else {})},
                  "instance_type": rng.choice(types)["name"], "duration": rng.choice([5, 10, 30, 60])}
                 for k in range(rng.randint(10, 60))]  # fmt: skip
    for w in workloads:
        t = next(t for t in types if t["name"] == w["instance_type"])
        w["requests"]["gpu"] = min(w["requests"]["gpu"], t["capacity"]["gpu"])
    return {"cluster": {"instance_types": types}, "policy": {"idle_compute": "fair-share"}, "teams": teams,
            "workloads": workloads, "until": 150}  # fmt: skip


@pytest.mark.parametrize("seed", range(30))
def test_borrowers_passed_over_could_never_be_victims(seed):
    data = _contended(seed)
    """The search passes over fair-share borrowers whose share is below the claimant's, and work whose eviction
    would push its team below its nominal quota (Scheduler.spare_work). Every candidate passed over must be one
    that _eligible refuses even with nothing else evicted, so the search's answer cannot change; checked on
    every search of random runs."""
    from scheduling.engine import preemption
    from scheduling.engine.fairshare import dominant_share

    original = preemption._candidates

    def candidates(s, job, f):
        out, below, reason, shares_read = original(s, job, f)
        cross = [c for c in out if c[0].team is not job.team]
        if reason is not None and reason != "reclaim":
            kept = {id(v) for v, _ in cross}
            claimant = dominant_share(s.book, job.team.book, f, job.total)
            for victim, why in _every_borrowers_work(s, job, f, reason):
                if id(victim) not in kept:
                    assert not preemption._eligible(s, job, victim, why, {}, claimant), (job.name, victim.name)
        return out, below, reason, shares_read

    preemption._candidates = candidates
    try:
        Simulation(parse_scenario(data)).run()
    finally:
        preemption._candidates = original
