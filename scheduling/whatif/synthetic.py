"""History for demos, tests and benchmarks: the Philly sample spread over N days, submitted by the demo teams
(sizes and priorities as demo traffic gives them), run through the engine's simulator under the current
configuration, and written to the database as jobs with their events, exactly as if the admission loop had
lived through them. A replay of that window under the unchanged configuration must find the same outcome.

This writes jobs that never ran on a cluster: use it on a demo, test or benchmark database only.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from quotas.models import ComputeAllocation, PriorityClass, Team, User
from scheduling.demo_traffic import priority_for, shape, team_for, trace
from scheduling.engine import simulate_scenario
from scheduling.models import Job, JobEvent, JobState
from scheduling.whatif.recorded import History, JobRecord
from scheduling.whatif.scenario import build_scenario, current_config

MIN_DURATION_S, MAX_DURATION_S = 60, 2 * 86400


def _submitters() -> dict[str, User]:
    out = {}
    fallback = User.objects.order_by("pk").first()
    for team in Team.objects.prefetch_related("members"):
        members = sorted(team.members.all(), key=lambda u: u.pk)
        out[team.name] = members[0] if members else fallback
    return out


def _jobs(start: datetime, days: int, repeat: int, stride: int) -> list[Job]:
    """Unsaved jobs, in submit order."""
    rows = trace()[::stride]
    span = rows[-1].offset_s + 1
    window = days * 86400
    allocations: dict[str, list[ComputeAllocation]] = {}
    for alloc in ComputeAllocation.objects.select_related("team", "instance_type"):
        allocations.setdefault(alloc.team.name, []).append(alloc)
    classes = {pc.name: pc for pc in PriorityClass.objects.all()}
    types = {a.instance_type.name: a.instance_type for allocs in allocations.values() for a in allocs}
    users = _submitters()
    teams = {t.name: t for t in Team.objects.all()}
    jobs = []
    for copy in range(repeat):
        for row in rows:
            team = team_for(row.vc)
            sizes = shape(row, allocations.get(team, []), team)
            if sizes is None or users.get(team) is None or team not in teams:
                continue
            offset = int((row.offset_s / span + copy / repeat) % 1.0 * window)
            duration = int(min(MAX_DURATION_S, max(MIN_DURATION_S, row.duration_s)))
            jobs.append(
                Job(
                    team=teams[team],
                    submitted_by=users[team],
                    name=f"philly-r{row.index:05d}-{copy}",
                    instance_type=types[sizes["instance_type"]],
                    accelerators=sizes["accelerators"],
                    vcpus=sizes["vcpus"],
                    memory_gib=sizes["memory_gib"],
                    pods=sizes["pods"],
                    priority_class=classes.get(priority_for(team, row)),
                    image="nvcr.io/nvidia/pytorch:24.05-py3",
                    expected_duration_s=duration,
                    submitted_at=start + timedelta(seconds=offset),
                )
            )
    jobs.sort(key=lambda j: j.submitted_at)
    return jobs


def _records(jobs: list[Job], start: datetime) -> list[JobRecord]:
    """The unsaved jobs as the replay reads saved ones (their list index standing in for the id)."""
    return [
        JobRecord(
            pk=i,
            name=job.name,
            team=job.team.name,
            submit=(job.submitted_at - start).total_seconds(),
            requests=job.requests(),
            pods=job.pods,
            priority_class=job.priority_class.name if job.priority_class else None,
            instance_type=job.instance_type.name,
            expected_duration_s=job.expected_duration_s,
            state=job.state,
        )
        for i, job in enumerate(jobs)
    ]


@transaction.atomic
def record_simulated_history(
    *,
    days: int,
    end: datetime | None = None,
    repeat: int = 1,
    stride: int = 1,
    closed: bool = False,
    usage: bool = False,
) -> dict:
    """Write `days` of simulated history ending at `end` (now): every `stride`-th row of the Philly sample,
    `repeat` times over. `closed`: submissions stop two days before the end and whatever still runs or waits
    at the end is closed as cancelled (so a live cluster starting at `end` inherits nothing). `usage`: also
    usage samples every 10 minutes and their hourly and daily rollups. Returns counts and the window."""
    end = end or timezone.now().replace(microsecond=0)
    start = end - timedelta(days=days)
    jobs = _jobs(start, days - 2 if closed else days, repeat, stride)
    history = History(start, end, _records(jobs, start), 0)
    config = current_config()
    output = simulate_scenario(build_scenario(history, config))
    events = [JobEvent(job=j, at=j.submitted_at, to_state=JobState.PENDING, reason="submitted") for j in jobs]
    events += _outcome_events(jobs, output, start)
    if closed:
        events += _close(jobs, end)
    Job.objects.bulk_create(jobs, batch_size=2000)
    for event in events:
        event.job = event.job  # the job's id, now that it has one
    JobEvent.objects.bulk_create(events, batch_size=5000)
    samples = _record_usage(jobs, events, config, start, end) if usage else 0
    return {"jobs": len(jobs), "start": start, "end": end, "events": len(output["events"]), "samples": samples}


def _close(jobs: list[Job], end: datetime) -> list[JobEvent]:
    events = []
    for job in jobs:
        if job.state in (JobState.RUNNING, JobState.PENDING):
            reason = "demo history: closed at the end of the recorded window"
            events.append(JobEvent(job=job, at=end, from_state=job.state, to_state=JobState.CANCELLED, reason=reason))
            job.state, job.finished_at = JobState.CANCELLED, end
    return events


TICK_S = 600
RESOURCES = ("acc", "cpu", "mem")


def _record_usage(jobs: list[Job], events: list[JobEvent], config, start: datetime, end: datetime) -> int:
    """Usage samples every TICK_S seconds from the jobs' events (what runs and what waits, per team and
    instance type), then the hourly and daily rollups, through the usage app's own rollup."""
    from scheduling.usage.models import UsageSample
    from scheduling.usage.services import usage_rollup

    ticks = int((end - start).total_seconds() // TICK_S) + 1
    running: dict[tuple, list[float]] = {}
    waiting: dict[tuple, list[float]] = {}

    def add(grid, key, t0: datetime, t1: datetime, amounts):
        a = max(0, math.ceil((t0 - start).total_seconds() / TICK_S))
        b = min(ticks, math.ceil((t1 - start).total_seconds() / TICK_S))
        if b <= a:
            return
        row = grid.setdefault(key, [0.0] * (ticks + 1) * 4)
        for i, amount in enumerate(amounts):
            row[i * (ticks + 1) + a] += amount
            row[i * (ticks + 1) + b] -= amount

    open_at: dict[int, tuple] = {}
    for event in sorted(events, key=lambda e: e.at):
        job = event.job
        size = (job.accelerators * job.pods, job.vcpus * job.pods, job.memory_gib * job.pods, 1.0)
        began = open_at.pop(id(job), None)
        if began is not None:
            grid, key, t0, _ = began
            add(grid, key, t0, event.at, size)
        if event.to_state == JobState.RUNNING:
            open_at[id(job)] = (running, (job.team_id, job.assigned_instance_type.pk), event.at, size)
        elif event.to_state == JobState.PENDING:
            open_at[id(job)] = (waiting, (job.team_id, job.instance_type.pk), event.at, size)
    for grid, key, t0, size in open_at.values():  # still running or waiting at the end
        add(grid, key, t0, end, size)
    quotas = _quota_grid(config)
    rows = []
    for key in set(running) | set(waiting) | set(quotas):
        used, pending, quota = running.get(key), waiting.get(key), quotas.get(key, (0.0, 0.0, 0.0))
        level = [[0.0] * 4 for _ in range(2)]
        for t in range(ticks):
            values = {}
            for g, grid_row in enumerate((used, pending)):
                for i in range(4):
                    if grid_row is not None:
                        level[g][i] += grid_row[i * (ticks + 1) + t]
            for i, r in enumerate(RESOURCES):
                values[f"used_{r}"] = level[0][i]
                values[f"borrowed_{r}"] = max(0.0, level[0][i] - quota[i])
                values[f"quota_{r}"] = quota[i]
                values[f"pending_{r}"] = level[1][i]
            values["pending_jobs"] = level[1][3]
            if any(values.values()):
                at = start + timedelta(seconds=t * TICK_S)
                rows.append(UsageSample(at=at, team_id=key[0], instance_type_id=key[1], seconds=TICK_S, **values))
    UsageSample.objects.bulk_create(rows, batch_size=5000)
    usage_rollup(granularity="hour", start=start, end=end)
    usage_rollup(granularity="day", start=start, end=end)
    return len(rows)


def _quota_grid(config) -> dict[tuple, tuple]:
    from quotas.models import InstanceType

    types = {it.name: it for it in InstanceType.objects.all()}
    teams = dict(Team.objects.values_list("name", "pk"))
    out = {}
    for team in config.teams:
        for type_name, quota in team["quota"].items():
            it = types.get(type_name)
            if it is None or team["name"] not in teams:
                continue
            acc = sum(v for r, v in quota.items() if r not in ("cpu", "memory"))
            out[(teams[team["name"]], it.pk)] = (acc, quota.get("cpu", 0.0), quota.get("memory", 0.0))
    return out


def _outcome_events(jobs: list[Job], output: dict, start: datetime) -> list[JobEvent]:
    """Set each job's final fields from the simulator's events and return its events, in order."""
    from quotas.models import InstanceType

    types = {it.name: it for it in InstanceType.objects.all()}
    events = []
    for event in output["events"]:
        job = jobs[int(event["workload"])]
        at = start + timedelta(seconds=float(event["t"]))
        kind = event["type"]
        if kind == "admitted":
            job.assigned_instance_type = types[event["instance_type"]]
            job.admitted_at = job.started_at = at
            job.finished_at = None
            events += [
                JobEvent(job=job, at=at, from_state=job.state, to_state=JobState.ADMITTED, reason="admitted"),
                JobEvent(job=job, at=at, from_state=JobState.ADMITTED, to_state=JobState.RUNNING, reason="running"),
            ]
            job.state = JobState.RUNNING
        elif kind == "preempted":
            reason = f"preempted by {event['by']} ({event['reason']})"
            events += [
                JobEvent(job=job, at=at, from_state=job.state, to_state=JobState.PREEMPTED, reason=reason),
                JobEvent(job=job, at=at, from_state=JobState.PREEMPTED, to_state=JobState.PENDING, reason="requeued"),
            ]
            job.state = JobState.PENDING
            job.preemption_count += 1
        else:
            events.append(JobEvent(job=job, at=at, from_state=job.state, to_state=JobState.SUCCEEDED, reason="done"))
            job.state, job.finished_at = JobState.SUCCEEDED, at
    return events
