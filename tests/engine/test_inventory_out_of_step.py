"""A live cluster can change under running work (node groups shrink or vanish): decide() must still answer."""

import pytest

from scheduling.engine import InstanceType, Snapshot, Team, Workload, decide

P5 = {"gpu": 8, "cpu": 192, "memory": 2048}


@pytest.mark.parametrize(
    "count, nodes",
    [(0, [3]), (None, [3]), (2, [5]), (2, [0, 1]), (2, [-1])],
    ids=["type-has-no-nodes-now", "quota-only-type", "node-index-gone", "wrong-pod-count", "negative-index"],
)
def test_running_work_on_nodes_the_cluster_no_longer_has_is_counted_not_fatal(count, nodes):
    types = [InstanceType("ml.p5.48xlarge", P5, count)]
    teams = [Team("a", quota={"ml.p5.48xlarge": {"gpu": 8}})]
    running = Workload("r", "a", {"gpu": 4}, running_on="ml.p5.48xlarge", nodes=nodes, admitted_at=0)
    waiting = Workload("w", "a", {"gpu": 4}, submit=1)
    decisions = decide(Snapshot(types, teams, [running, waiting], now=5))
    assert (
        decisions.teams["a"].usage["ml.p5.48xlarge"]["gpu"]
        == 4 + sum(a.workload == "w" for a in decisions.admissions) * 4
    )
    assert "w" in decisions.reasons or [a.workload for a in decisions.admissions] == ["w"]
