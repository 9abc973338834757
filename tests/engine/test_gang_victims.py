"""A gang's victims are chosen node by node: the fewest evictions that empty enough nodes, not a sweep in
global victim order that half-empties many nodes first."""

from scheduling.engine import InstanceType, Policy, Snapshot, Team, Workload, decide


def test_a_gang_evicts_two_whole_jobs_rather_than_nine():
    nodes = InstanceType("n", {"gpu": 8}, 3)
    team = Team("t", {"n": {"gpu": 24}}, cohort=None, preempt_team_tasks="LowerPriority")
    running = [Workload("big-1", "t", {"gpu": 8}, priority=0, running_on="n", nodes=[1], admitted_at=0)]
    running += [Workload("big-2", "t", {"gpu": 8}, priority=0, running_on="n", nodes=[2], admitted_at=1)]
    # eight small jobs on node 0, admitted last: first in global victim order (most recently admitted)
    running += [
        Workload(f"small-{i}", "t", {"gpu": 1}, priority=0, running_on="n", nodes=[0], admitted_at=10 + i)
        for i in range(8)
    ]
    gang = Workload("gang", "t", {"gpu": 8}, pods=2, priority=10, submit=20)
    decisions = decide(Snapshot([nodes], [team], running + [gang], Policy(), now=30))
    assert [a.workload for a in decisions.admissions] == ["gang"]
    assert sorted(p.workload for p in decisions.preemptions) == ["big-1", "big-2"]
    assert sorted(decisions.admissions[0].nodes) == [1, 2]
