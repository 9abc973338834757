"""The engine's vocabulary: a cluster snapshot going in, decisions coming out.

Plain dataclasses with no behaviour, so the Django side and the simulator can build and read them freely.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class InstanceType:
    name: str
    capacity: dict[str, float]  # per node, e.g. {"gpu": 8, "cpu": 192, "memory": 2048}
    count: int | None = None  # nodes; None = no cluster limit (quota is the only limit)


@dataclass
class Policy:
    task_prioritization: str = "fcfs"  # "fcfs" | "task-ranking"
    idle_compute: str = "fair-share"  # "fair-share" | "fcfs"
    backfill: str = "reserve"  # "reserve": pending heads hold reservations (nobody starves) | "none"


@dataclass
class Team:
    name: str
    quota: dict[str, dict[str, float]]  # resolved nominal quota per instance type and resource
    cohort: str | None = "default"
    fair_share_weight: float = 1.0
    sharing: str = "LendAndBorrow"  # "DontLend" | "Lend" | "LendAndBorrow"
    borrow_limit_pct: float | None = None
    preempt_team_tasks: str = "Never"  # "Never" | "LowerPriority"
    borrowing_limit: dict[str, dict[str, float]] | None = None  # overrides borrow_limit_pct where named
    lending_limit: dict[str, dict[str, float]] | None = None
    reclaim_within_cohort: str = "Any"  # "Never" | "LowerPriority" | "Any"
    borrow_within_cohort: str = "Never"  # "Never" | "LowerPriority"
    within_team: str | None = None  # overrides preempt_team_tasks; also "LowerOrNewerEqualPriority"


@dataclass
class Workload:
    name: str
    team: str
    requests: dict[str, float]  # per pod
    pods: int = 1
    priority: int = 0
    submit: float = 0.0
    instance_type: str | None = None  # requested type, or None = any type the team has quota on
    running_on: str | None = None  # instance type if already admitted
    nodes: list[int] | None = None  # node index per pod when admitted (None = let the engine place)
    admitted_at: float | None = None
    duration: float | None = None  # expected run time in seconds; None = unknown (runs "forever" in plans)


@dataclass
class Snapshot:
    instance_types: list[InstanceType]
    teams: list[Team]
    workloads: list[Workload]
    policy: Policy = field(default_factory=Policy)
    now: float = 0.0


@dataclass
class Admission:
    workload: str
    instance_type: str
    nodes: list[int] | None
    borrowed: bool


@dataclass
class Preemption:
    workload: str
    by: str
    reason: str  # "reclaim" | "fair-share" | "priority"


@dataclass
class Plan:
    """Where a pending workload stands in the engine's plan.

    `rank` is its place in the order the engine plans and admits (1 = next); `team_rank` its place in its
    team's queue. A team's head with a reservation has `planned_start` (seconds, same clock as `now`), the
    instance type and the running workloads whose ends make the room (`waits_for`). Others get
    `estimated_start`: the earliest instant the plan leaves room for them once every head before them in
    planning order holds its reservation (conservative: None where no finite start exists).
    """

    rank: int
    team_rank: int
    head: bool
    planned_start: float | None = None
    estimated_start: float | None = None
    instance_type: str | None = None
    waits_for: list[str] = field(default_factory=list)


@dataclass
class TeamStatus:
    quota: dict[str, dict[str, float]]
    borrowing_limit: dict[str, dict[str, float]] | None  # None = unlimited
    usage: dict[str, dict[str, float]]
    borrowed: dict[str, dict[str, float]]
    lent: dict[str, dict[str, float]]
    fair_share: dict[str, dict[str, float]]
    pending: int
    borrowable: dict[str, dict[str, float]] = field(default_factory=dict)  # room it could borrow now


@dataclass
class Decisions:
    admissions: list[Admission]
    preemptions: list[Preemption]
    reasons: dict[str, str]  # every workload still pending -> why, in plain words
    teams: dict[str, TeamStatus]
    plans: dict[str, Plan] = field(default_factory=dict)  # every workload still pending -> its place in the plan
