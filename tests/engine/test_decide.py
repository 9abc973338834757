"""decide(): one settle of a snapshot, as the live admission loop calls it."""

import subprocess
import sys

import pytest

from scheduling.engine import (
    InstanceType,
    Policy,
    Snapshot,
    Team,
    Workload,
    decide,
    proportional_defaults,
    resolve_quota,
)

P5 = {"gpu": 8, "cpu": 192, "memory": 2048}


def p5(count=2):
    return InstanceType("p5", dict(P5), count)


def team(name, gpu, **extra):
    return Team(name, {"p5": {"gpu": gpu, "cpu": gpu * 24, "memory": gpu * 256}}, **extra)


def work(name, team_name, gpu=1, pods=1, **extra):
    return Workload(name, team_name, {"gpu": gpu}, pods=pods, **extra)


def test_engine_imports_neither_django_nor_kubernetes():
    code = (
        "import sys, scheduling.engine; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'kubernetes')]; "
        "sys.exit(1 if bad else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_proportional_defaults_follow_the_accelerators_then_vcpus():
    assert proportional_defaults(P5, {"gpu": 2}) == {"gpu": 2, "cpu": 48, "memory": 512}
    assert proportional_defaults({"cpu": 8, "memory": 16}, {"cpu": 2}) == {"cpu": 2, "memory": 4}
    assert proportional_defaults(P5, {"gpu": 2, "cpu": 40}) == {"gpu": 2, "cpu": 40, "memory": 512}
    assert proportional_defaults(P5, {"memory": 1024}) == {"gpu": 4, "cpu": 96, "memory": 1024}
    assert proportional_defaults({}, {"gpu": 2}) == {"gpu": 2}


def test_resolve_quota_counts_whole_instances():
    assert resolve_quota({"cpu": 8, "memory": 16}, {"count": 3}) == {"cpu": 24, "memory": 48}
    with pytest.raises(ValueError):
        resolve_quota(None, {"count": 1})


def test_admission_places_every_pod_of_a_gang_on_a_node():
    snap = Snapshot([p5()], [team("a", 16, cohort=None)], [work("g", "a", gpu=4, pods=3)])
    decisions = decide(snap)
    [admission] = decisions.admissions
    assert admission.workload == "g" and admission.instance_type == "p5" and not admission.borrowed
    assert len(admission.nodes) == 3
    assert max(admission.nodes.count(n) for n in set(admission.nodes)) == 2  # best fit packs 2 per node


def test_running_pods_on_given_nodes_leave_a_gap_that_is_reported():
    running = work("r", "a", gpu=6, running_on="p5", nodes=[0], admitted_at=-5)
    running2 = work("r2", "a", gpu=6, running_on="p5", nodes=[1], admitted_at=-5)
    snap = Snapshot([p5()], [team("a", 16, cohort=None)], [running, running2, work("w", "a", gpu=4)])
    decisions = decide(snap)
    assert decisions.admissions == []
    assert decisions.reasons["w"] == "quota allows it, but no node has 4 free GPUs (the largest gap is 2)"
    assert decisions.teams["a"].usage == {"p5": {"gpu": 12}}


def test_reason_names_the_borrow_limit():
    teams = [team("a", 8, borrow_limit_pct=50), team("b", 8)]
    running = [work(f"r{i}", "a", gpu=1, running_on="p5", admitted_at=0) for i in range(6)]
    snap = Snapshot([InstanceType("p5", dict(P5), None)], teams, running + [work("big", "a", gpu=8)])
    reason = decide(snap).reasons["big"]
    assert reason == "needs 8 GPUs of p5; a uses 6 of its 8-GPU quota: 6 in use + 8 > 8 quota + 4 borrow limit (50%)"


def test_quota_above_capacity_waits_with_a_reason():
    running = [work("r", "g", gpu=8, running_on="p5", admitted_at=0), work("s", "g", gpu=8, running_on="p5")]
    snap = Snapshot([p5()], [team("g", 24, cohort=None)], running + [work("w", "g", gpu=4)])
    reason = decide(snap).reasons["w"]
    assert reason.startswith("quota of 24 GPUs on p5 exceeds the cluster's 16; waiting for capacity")


def test_reclaim_names_the_preemptor_and_takes_the_newest():
    teams = [team("x", 4), team("y", 4)]
    running = [work(f"y{i}", "y", running_on="p5", admitted_at=i) for i in range(8)]
    snap = Snapshot([p5(1)], teams, running + [work("x1", "x", gpu=2)])
    decisions = decide(snap)
    assert [(p.workload, p.by, p.reason) for p in decisions.preemptions] == [
        ("y7", "x1", "reclaim"),
        ("y6", "x1", "reclaim"),
    ]
    assert [a.workload for a in decisions.admissions] == ["x1"]
    assert set(decisions.reasons) == {"y6", "y7"}


@pytest.mark.parametrize("big_priority, victims", [(1, ["big"]), (5, ["s3", "s2", "s1", "s0"])])
def test_one_victim_that_suffices_beats_several_of_no_lower_priority(big_priority, victims):
    t = team("t", 8, cohort=None, preempt_team_tasks="LowerPriority")
    running = [work(f"s{i}", "t", gpu=1, priority=1, running_on="p5", admitted_at=10 + i) for i in range(4)]
    running.append(work("big", "t", gpu=4, priority=big_priority, running_on="p5", admitted_at=0))
    snap = Snapshot([p5(1)], [t], running + [work("urgent", "t", gpu=4, priority=9)])
    decisions = decide(snap)
    assert [(p.workload, p.by, p.reason) for p in decisions.preemptions] == [(v, "urgent", "priority") for v in victims]


def test_priority_preemption_only_where_the_team_allows_it():
    for policy, expected in (("LowerPriority", ["low"]), ("Never", [])):
        t = team("t", 2, cohort=None, preempt_team_tasks=policy)
        snap = Snapshot([p5(1)], [t], [
            work("low", "t", gpu=2, priority=1, running_on="p5", admitted_at=0),
            work("high", "t", gpu=2, priority=5),
        ])  # fmt: skip
        assert [p.workload for p in decide(snap).preemptions] == expected


def test_lower_or_newer_equal_priority_evicts_newer_work_of_the_same_priority():
    t = team("t", 2, cohort=None, within_team="LowerOrNewerEqualPriority")
    snap = Snapshot([p5(1)], [t], [
        work("newer", "t", gpu=2, priority=1, submit=10, running_on="p5", admitted_at=10),
        work("older", "t", gpu=2, priority=1, submit=0),
    ])  # fmt: skip
    assert [p.workload for p in decide(snap).preemptions] == ["newer"]


def test_best_effort_fifo_lets_small_work_pass_a_blocked_head():
    snap = Snapshot([p5(1)], [team("a", 8, cohort=None)], [
        work("r", "a", gpu=6, running_on="p5", admitted_at=0),
        work("big", "a", gpu=4, submit=1),
        work("small", "a", gpu=2, submit=2),
    ])  # fmt: skip
    decisions = decide(snap)
    assert [a.workload for a in decisions.admissions] == ["small"]
    assert "big" in decisions.reasons


def test_task_ranking_orders_by_priority_fcfs_by_submit_time():
    for order, winner in (("fcfs", "early"), ("task-ranking", "important")):
        snap = Snapshot([p5(1)], [team("a", 8, cohort=None)], [
            work("early", "a", gpu=8, priority=1, submit=0),
            work("important", "a", gpu=8, priority=9, submit=5),
        ], policy=Policy(task_prioritization=order))  # fmt: skip
        assert [a.workload for a in decide(snap).admissions] == [winner]


def test_instance_type_without_borrowing_is_preferred_to_one_with():
    types = [InstanceType("p5", dict(P5), None), InstanceType("g5", {"gpu": 1, "cpu": 8, "memory": 32}, None)]
    a = Team("a", {"p5": {"gpu": 1}, "g5": {"gpu": 4}})
    lender = Team("b", {"p5": {"gpu": 8}})
    decisions = decide(Snapshot(types, [a, lender], [work("w", "a", gpu=2)]))
    assert [(x.instance_type, x.borrowed) for x in decisions.admissions] == [("g5", False)]
    decisions = decide(Snapshot(types, [a, lender], [work("w", "a", gpu=6)]))
    assert [(x.instance_type, x.borrowed) for x in decisions.admissions] == [("p5", True)]


def test_dont_lend_and_lend():
    types = [InstanceType("p5", dict(P5), None)]
    for sharing, lends in (("DontLend", False), ("Lend", True)):
        teams = [team("owner", 8, sharing=sharing), team("borrower", 0)]
        decisions = decide(Snapshot(types, teams, [work("w", "borrower", gpu=2, instance_type="p5")]))
        assert bool(decisions.admissions) == lends
    teams = [team("lend-only", 0, sharing="Lend"), team("rich", 8)]
    decisions = decide(Snapshot(types, teams, [work("w", "lend-only", gpu=2, instance_type="p5")]))
    assert decisions.admissions == []
    assert "does not borrow (sharing is Lend)" in decisions.reasons["w"]


def test_absolute_lending_and_borrowing_limits():
    types = [InstanceType("p5", dict(P5), None)]
    teams = [team("owner", 8, lending_limit={"p5": {"gpu": 3}}), team("b", 0)]
    snap = Snapshot(types, teams, [work(f"w{i}", "b", instance_type="p5") for i in range(5)])
    assert len(decide(snap).admissions) == 3
    teams = [team("owner", 8), team("b", 0, borrowing_limit={"p5": {"gpu": 2}})]
    decisions = decide(Snapshot(types, teams, [work(f"w{i}", "b", instance_type="p5") for i in range(5)]))
    assert len(decisions.admissions) == 2
    assert decisions.teams["b"].borrowing_limit == {"p5": {"gpu": 2}}
    assert "2 in use + 1 > 0 quota + 2 borrowing limit" in decisions.reasons["w2"]


def test_fair_share_splits_the_idle_pool_by_weight_and_weight_zero_takes_leftovers():
    types = [InstanceType("p5", dict(P5), None)]
    teams = [team("a", 4, fair_share_weight=3), team("b", 4, fair_share_weight=1),
             team("idle", 8), team("zero", 0, fair_share_weight=0)]  # fmt: skip
    pending = [work(f"a{i}", "a", instance_type="p5") for i in range(20)]
    pending += [work(f"b{i}", "b", instance_type="p5") for i in range(20)]
    pending += [work(f"z{i}", "zero", instance_type="p5") for i in range(3)]
    decisions = decide(Snapshot(types, teams, pending))
    share = {name: status.fair_share["p5"]["gpu"] for name, status in decisions.teams.items()}
    assert share == {"a": 10, "b": 6, "idle": 0, "zero": 0}
    usage = {name: status.usage.get("p5", {}).get("gpu", 0) for name, status in decisions.teams.items()}
    assert usage["zero"] == 0 and usage["a"] + usage["b"] == 16


def test_fair_share_preemption_stops_at_nominal_and_at_the_claimants_share():
    types = [InstanceType("p5", dict(P5), None)]
    teams = [team("a", 4), team("b", 4)]
    running = [work(f"a{i}", "a", running_on="p5", admitted_at=i) for i in range(8)]
    pending = [work(f"b{i}", "b", submit=10, instance_type="p5") for i in range(8)]
    decisions = decide(Snapshot(types, teams, running + pending, now=10))
    assert {p.reason for p in decisions.preemptions} == {"reclaim"}
    assert decisions.teams["a"].usage["p5"]["gpu"] == 4 and decisions.teams["b"].usage["p5"]["gpu"] == 4


def test_settling_a_settled_snapshot_changes_nothing():
    teams = [team("x", 4), team("y", 4, preempt_team_tasks="LowerPriority")]
    workloads = [work(f"y{i}", "y", priority=i % 3, running_on="p5", admitted_at=i) for i in range(8)]
    workloads += [work(f"x{i}", "x", gpu=2, priority=1) for i in range(3)]
    snap = Snapshot([p5(1)], teams, workloads)
    first = decide(snap)
    admitted = {a.workload: a for a in first.admissions}
    preempted = {p.workload for p in first.preemptions}
    for w in snap.workloads:
        if w.name in admitted:
            w.running_on, w.nodes, w.admitted_at = admitted[w.name].instance_type, admitted[w.name].nodes, 0
        elif w.name in preempted:
            w.running_on = w.nodes = w.admitted_at = None
    second = decide(snap)
    assert second.admissions == [] and second.preemptions == []
    assert set(second.reasons) == set(first.reasons)


def test_weight_zero_gives_back_what_it_borrowed_when_someone_else_wants_it():
    types = [InstanceType("p5", dict(P5), None)]
    teams = [team("zero", 2, fair_share_weight=0), team("b", 2), team("idle", 4)]
    running = [work(f"z{i}", "zero", running_on="p5", admitted_at=i) for i in range(6)]
    pending = [work(f"b{i}", "b", submit=10, instance_type="p5") for i in range(5)]
    decisions = decide(Snapshot(types, teams, running + pending, now=10))
    reasons = {p.reason for p in decisions.preemptions}
    assert reasons == {"fair-share"}  # b fills the idle 2 GPUs first, then borrows
    assert decisions.teams["zero"].usage["p5"]["gpu"] == 3  # down to what b does not want
    assert decisions.teams["b"].usage["p5"]["gpu"] == 5


def test_fair_share_preemption_never_reverses():
    """After b takes its fair share from a, neither side has a claim on the other: a second settle is idle."""
    types = [InstanceType("p5", dict(P5), None)]
    teams = [team("a", 2, fair_share_weight=1), team("b", 2, fair_share_weight=1), team("idle", 4)]
    running = [work(f"a{i}", "a", running_on="p5", admitted_at=i) for i in range(8)]
    pending = [work(f"b{i}", "b", submit=10, instance_type="p5") for i in range(8)]
    decisions = decide(Snapshot(types, teams, running + pending, now=10))
    assert decisions.teams["a"].usage["p5"]["gpu"] == 4 and decisions.teams["b"].usage["p5"]["gpu"] == 4
    assert decisions.teams["a"].fair_share["p5"]["gpu"] == 4
    assert "its fair share is 4 GPUs" in decisions.reasons["b4"]


def test_reason_when_the_cohort_has_nothing_to_lend_and_reclaim_is_off():
    types = [InstanceType("p5", dict(P5), None)]
    teams = [team("x", 4, reclaim_within_cohort="Never"), team("y", 4)]
    running = [work(f"y{i}", "y", running_on="p5", admitted_at=i) for i in range(8)]
    decisions = decide(Snapshot(types, teams, running + [work("x1", "x", instance_type="p5")]))
    assert decisions.preemptions == []
    assert decisions.reasons["x1"] == (
        "needs 1 GPU of p5; x uses 0 of its 4-GPU quota and cohort default has 0 GPUs idle to lend; "
        "its team does not reclaim lent quota (reclaim_within_cohort Never)"
    )


def test_status_reports_borrowed_and_lent():
    types = [InstanceType("p5", dict(P5), None)]
    teams = [team("a", 2), team("b", 6)]
    decisions = decide(Snapshot(types, teams, [work("w", "a", gpu=5)]))
    a, b = decisions.teams["a"], decisions.teams["b"]
    assert a.borrowed == {"p5": {"gpu": 3}} and b.lent == {"p5": {"gpu": 3}}
    assert a.borrowing_limit is None and a.pending == 0
