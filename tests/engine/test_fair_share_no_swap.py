"""Fair-share preemption takes work only from a team *above* the claimant (its share now strictly higher):
two teams whose shares are equal (here both dominated by what they borrow on another instance type, so
moving 4 GPUs on p changes neither) would otherwise swap the same work for nothing, and the victim would
at once take it back. Within one settle the waste check undid such a swap; across settles cut by the live
scheduler's budget (every pass decides at least one thing) the two evicted each other pass after pass: in
bench/bounds.py's full cluster, two jobs did so 172 times each, and a whole re-read of the state started
1,200 preemptions."""

import json
import os
import time

from scheduling.engine import preemption
from scheduling.engine.scenario import parse_scenario
from scheduling.engine.simulator import Simulation, simulate_scenario

HERE = os.path.join(os.path.dirname(__file__), "regressions", "fair-share-equal-shares-swap.json")


def _at(t: float) -> Simulation:
    with open(HERE) as handle:
        data = json.load(handle)
    data["until"] = t
    sim = Simulation(parse_scenario(data))
    sim.run()
    return sim


def test_a_team_at_the_same_share_is_no_fair_share_victim():
    sim = _at(5)
    s = sim.s
    claimant, f = s.jobs["a-3"], s.fidx["p"]
    assert claimant.state == "pending"
    assert s.fair_share(claimant.team)[f][0] == 12.0 and claimant.team.book.usage[f][0] == 8.0  # below its share
    assert s.dominant_share(claimant.team) == s.dominant_share(s.by_name["b"]) == 0.4  # b is not above it
    candidates = preemption._candidates(s, claimant, f)[0]
    assert {victim.name for victim, reason in candidates} == {"b-1", "b-2"}  # borrowed work, looked at
    assert preemption.find_victims(s, claimant, f) is None  # none taken


def test_settles_cut_after_each_decision_do_not_swap_work_back_and_forth():
    sim = _at(5)
    s = sim.s
    start = len(s.log)
    for _ in range(10):  # the live scheduler: a pass past its budget stops after its first decision
        s.deadline = time.monotonic() - 1
        s.wake_all()
        s.settle(5.0)
    assert [entry for entry in s.log[start:] if entry[0] == "preempted"] == []


def test_the_whole_run_preempts_nothing():
    with open(HERE) as handle:
        out = simulate_scenario(json.load(handle))
    assert [e for e in out["events"] if e["type"] == "preempted"] == []
    assert out["workloads"]["a-3"]["state"] == "pending"
