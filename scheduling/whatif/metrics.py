"""Per-team figures of one outcome (recorded, or simulated under a configuration), computed by one function so
that history and draft are measured alike.

An outcome is, per job: when it was submitted, when it was first admitted, its runs (instance type, start, end)
and its preemptions. Over the window [0, length):
- wait: first admission - submission; a job never admitted counts as waiting until the window's end (and is
  counted as "still waiting");
- accelerator-hours: the accelerators of each run over its part inside the window; within quota and borrowed
  split by the team's usage on each instance type against its nominal quota at every instant;
- utilization: accelerator-hours within quota / (nominal accelerators x window), per team; for the cluster,
  all accelerator-hours / (capacity x window);
- preemptions: evictions of the team's jobs inside the window.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from scheduling.whatif.recorded import History, JobRecord, Run


@dataclass
class Outcome:
    first_admit: float | None
    runs: list[Run] = field(default_factory=list)
    preemptions: int = 0


def recorded_outcomes(history: History) -> dict[str, Outcome]:
    return {
        str(job.pk): Outcome(job.runs[0].start if job.runs else None, list(job.runs), job.preemptions)
        for job in history.jobs
    }


def simulated_outcomes(output: dict) -> dict[str, Outcome]:
    """From the simulator's events: admitted opens a run, preempted or finished closes it."""
    out: dict[str, Outcome] = {name: Outcome(None) for name in output["workloads"]}
    for event in output["events"]:
        outcome = out[event["workload"]]
        kind, t = event["type"], float(event["t"])
        if kind == "admitted":
            if outcome.first_admit is None:
                outcome.first_admit = t
            outcome.runs.append(Run(event["instance_type"], t, None))
        elif outcome.runs and outcome.runs[-1].end is None:
            outcome.runs[-1].end = t
            if kind == "preempted":
                outcome.preemptions += 1
    return out


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def _team_hours(jobs: list[JobRecord], outcomes, length: float, nominal: dict[str, float]) -> tuple[float, float]:
    """(accelerator-hours within quota, borrowed) for one team: a sweep over its usage per instance type."""
    steps: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for job in jobs:
        accelerators = job.accelerators
        if not accelerators:
            continue
        for run in outcomes[str(job.pk)].runs:
            start, end = max(run.start, 0.0), min(run.end if run.end is not None else length, length)
            if end > start:
                steps[run.instance_type] += [(start, accelerators), (end, -accelerators)]
    within = borrowed = 0.0
    for instance_type, changes in steps.items():
        quota = nominal.get(instance_type, 0.0)
        changes.sort()
        usage, last = 0.0, 0.0
        for t, delta in changes:
            if t > last:
                within += min(usage, quota) * (t - last)
                borrowed += max(usage - quota, 0.0) * (t - last)
                last = t
            usage += delta
    return within / 3600, borrowed / 3600


def team_figures(
    history: History, outcomes: dict[str, Outcome], quota: dict[str, dict[str, float]], capacity: dict[str, float]
) -> dict:
    """{"teams": {name: figures}, "cluster": figures} for one outcome."""
    length = history.length_s
    by_team: dict[str, list[JobRecord]] = defaultdict(list)
    for job in history.jobs:
        if str(job.pk) in outcomes:
            by_team[job.team].append(job)
    teams = {}
    for name in sorted(set(by_team) | set(quota)):
        jobs = by_team.get(name, [])
        measured = [j for j in jobs if not j.context]
        waits, waiting = [], 0
        for job in measured:
            first = outcomes[str(job.pk)].first_admit
            if first is None or first >= length:
                waiting += 1
                waits.append(max(length - job.submit, 0.0))
            else:
                waits.append(max(first - job.submit, 0.0))
        nominal = quota.get(name, {})
        within, borrowed = _team_hours(jobs, outcomes, length, nominal)
        quota_hours = sum(nominal.values()) * length / 3600
        teams[name] = {
            "jobs": len(measured),
            "still_waiting": waiting,
            "avg_wait_s": sum(waits) / len(waits) if waits else 0.0,
            "p95_wait_s": percentile(waits, 95),
            "hours_within_quota": within,
            "hours_borrowed": borrowed,
            "preemptions": sum(outcomes[str(j.pk)].preemptions for j in jobs),
            "utilization_pct": 100 * within / quota_hours if quota_hours else None,
        }
    total_hours = sum(t["hours_within_quota"] + t["hours_borrowed"] for t in teams.values())
    capacity_hours = sum(capacity.values()) * length / 3600
    all_waits = [t["avg_wait_s"] * t["jobs"] for t in teams.values()]
    jobs = sum(t["jobs"] for t in teams.values())
    cluster = {
        "jobs": jobs,
        "still_waiting": sum(t["still_waiting"] for t in teams.values()),
        "avg_wait_s": sum(all_waits) / jobs if jobs else 0.0,
        "hours_within_quota": sum(t["hours_within_quota"] for t in teams.values()),
        "hours_borrowed": sum(t["hours_borrowed"] for t in teams.values()),
        "preemptions": sum(t["preemptions"] for t in teams.values()),
        "utilization_pct": 100 * total_hours / capacity_hours if capacity_hours else None,
    }
    return {"teams": teams, "cluster": cluster}


def wait_of(job: JobRecord, outcome: Outcome | None, length: float) -> float | None:
    if outcome is None:
        return None
    if outcome.first_admit is None or outcome.first_admit >= length:
        return max(length - job.submit, 0.0)
    return max(outcome.first_admit - job.submit, 0.0)


def movers(history: History, before: dict[str, Outcome], after: dict[str, Outcome], limit: int = 15) -> list[dict]:
    """The jobs whose wait changed most between two outcomes, largest change first."""
    rows = []
    for job in history.jobs:
        if job.context:
            continue
        a = wait_of(job, before.get(str(job.pk)), history.length_s)
        b = wait_of(job, after.get(str(job.pk)), history.length_s)
        if a is None or b is None or abs(b - a) < 1:
            continue
        rows.append({"job": job.pk, "name": job.name, "team": job.team, "before_s": a, "after_s": b, "change_s": b - a})
    rows.sort(key=lambda r: (-abs(r["change_s"]), r["job"]))
    return rows[:limit]
