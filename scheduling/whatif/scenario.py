"""A window of history as a scenario for the engine's simulator (../shared/spec/scenario-format.md), under the
configuration the database holds now, or under a draft applied in a transaction that is rolled back.

The configuration is read through the same functions the admission loop uses (scheduling.snapshot), so
resolved quota, proportional defaults, priorities and the cluster policy (with whatever the engine's Policy
carries, e.g. backfill) mean in the replay what they mean live. Jobs keep their real submit times, sizes,
priority classes (weighed as the draft weighs them) and run times.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import yaml

from quotas import iac
from quotas.models import PriorityClass
from scheduling.snapshot import engine_instance_types, engine_policy, engine_teams, lowest_priority
from scheduling.whatif.recorded import History

TEAM_KEYS = (
    "cohort",
    "fair_share_weight",
    "sharing",
    "borrow_limit_pct",
    "preempt_team_tasks",
    "borrowing_limit",
    "lending_limit",
    "reclaim_within_cohort",
    "borrow_within_cohort",
    "within_team",
)


@dataclass
class Config:
    """The engine's view of one configuration, as scenario sections."""

    cluster: dict
    teams: list[dict]
    policy: dict
    priorities: dict[str, int]  # priority class name -> weight
    lowest: int  # the priority of a job without a class (or whose class the draft deletes)

    def quota_accelerators(self) -> dict[str, dict[str, float]]:
        """Nominal accelerators per team and instance type (GPUs and Neuron devices together)."""
        return {t["name"]: {it: _accelerators(q) for it, q in t["quota"].items()} for t in self.teams}

    def capacity_accelerators(self) -> dict[str, float]:
        return {it["name"]: _accelerators(it["capacity"]) * it["count"] for it in self.cluster["instance_types"]}


def _accelerators(amounts: dict) -> float:
    return sum(v for r, v in amounts.items() if r not in ("cpu", "memory"))


def current_config() -> Config:
    teams = []
    for team in engine_teams():
        entry = {"name": team.name, "quota": team.quota}
        entry.update({k: getattr(team, k) for k in TEAM_KEYS if getattr(team, k) is not None or k == "cohort"})
        teams.append(entry)
    policy = asdict(engine_policy())
    return Config(
        cluster={
            "instance_types": [
                {"name": it.name, "count": it.count or 0, "capacity": it.capacity} for it in engine_instance_types()
            ]
        },
        teams=teams,
        policy=policy,
        priorities=dict(PriorityClass.objects.values_list("name", "weight")),
        lowest=lowest_priority(),
    )


def draft_config(draft: dict, *, user=None) -> tuple[Config, list[str]]:
    """The configuration the draft would give, and the plan's lines; iac.ConfigError for a bad draft."""
    with iac.trial(yaml.safe_dump(draft, sort_keys=False), user=user) as plan:
        return current_config(), [c.line() for c in plan.changes]


def build_scenario(history: History, config: Config) -> dict:
    """The scenario dict: the window's jobs (names are job ids) under `config`, run to the window's end."""
    known_types = {it["name"] for it in config.cluster["instance_types"]}
    known_teams = {t["name"] for t in config.teams}
    workloads = []
    for job in history.jobs:
        if job.team not in known_teams:
            continue  # a team the draft deletes has no jobs to replay (deleting a team with jobs is refused anyway)
        workload = {
            "name": str(job.pk),
            "team": job.team,
            "priority": config.priorities.get(job.priority_class, config.lowest),
            "submit": job.submit,
            "requests": job.requests,
            "pods": job.pods,
            "instance_type": job.instance_type if job.instance_type in known_types else None,
            "duration": job.work_s,
        }
        if job.context:  # running when the window opened: only what was left of its run
            run = job.runs[-1]
            workload["duration"] = (run.end - 0.0) if run.end is not None else job.work_s
        workloads.append(workload)
    return {
        "name": f"replay of {history.start:%Y-%m-%d %H:%M} to {history.end:%Y-%m-%d %H:%M}",
        "cluster": config.cluster,
        "policy": config.policy,
        "teams": config.teams,
        "workloads": workloads,
        "until": history.length_s,
    }
