"""A job that fits its quota but not the cluster says how much of the cluster is free."""

from scheduling.engine import InstanceType, Snapshot, Team, Workload, decide


def test_the_reason_names_what_is_free_when_the_cluster_is_the_limit():
    p5 = InstanceType("ml.p5.48xlarge", {"gpu": 8, "cpu": 192, "memory": 2048}, count=1)
    teams = [
        Team("team-a", quota={p5.name: {"gpu": 8, "cpu": 192, "memory": 2048}}),
        Team("team-b", quota={p5.name: {"gpu": 4, "cpu": 96, "memory": 1024}}, sharing="DontLend"),
    ]
    workloads = [
        Workload("a1", "team-a", {"gpu": 6}, running_on=p5.name, admitted_at=-5, submit=-5),
        Workload("b1", "team-b", {"gpu": 4}, submit=1),
    ]
    decisions = decide(Snapshot([p5], teams, workloads, now=2))
    assert decisions.admissions == []
    assert decisions.reasons["b1"] == (
        "needs 4 GPUs of ml.p5.48xlarge; only 2 of the cluster's 8 GPUs of ml.p5.48xlarge are free (6 in use)"
    )
