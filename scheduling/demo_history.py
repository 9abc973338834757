"""Thirty days of demo history, made by the real engine.

A month of the Philly trace (scheduling/data/philly_october.csv) is mapped onto the demo teams the way live
demo traffic maps it (scheduling.demo_traffic: the same teams, instance types, pods and priority classes)
and replayed through the engine's scenario simulator against the database's own cluster, teams, quotas and
policy, ending now. What the simulation did is then written in bulk: the jobs with their final state, every
transition as a JobEvent (with the loop's own words for admissions and preemptions), a usage sample every
fifteen minutes taken from the engine's team status at that instant (what the live sampler records), and the
hourly and daily rollups those samples imply. Jobs still running at the end stay running on the simulated
cluster, which finishes them when their duration is up, and live demo traffic continues from there.
"""

from __future__ import annotations

import csv
import math
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

from django.db import transaction
from django.utils import timezone

from quotas.models import ComputeAllocation, InstanceType, PriorityClass, Role, Team, User
from scheduling import engine
from scheduling.backends.simulated import unit_hash
from scheduling.demo_traffic import TraceRow, request_for, team_for
from scheduling.engine.queues import PENDING
from scheduling.engine.scenario import Scenario, WorkloadSpec
from scheduling.engine.simulator import Simulation
from scheduling.engine.status import team_status
from scheduling.loop import admission_reason, preemption_reason
from scheduling.models import Job, JobEvent, JobState
from scheduling.snapshot import engine_instance_types, engine_policy, engine_teams, lowest_priority
from scheduling.usage.models import Granularity, UsageSample
from scheduling.usage.services import sample_rows, usage_rollup

TRACE = Path(__file__).resolve().parent / "data" / "philly_october.csv"
DAYS = 30
SAMPLE_SECONDS = 900
MAX_DURATION_S = 24 * 3600  # a month-long Philly job would hold its nodes for the whole demo
DURATION_SCALE = 1.0
FAILURE_RATE = 0.03
NAME_SUFFIX = "-h"  # history jobs end in -h<row>; live demo traffic's end in -r<row> (its progress marker)
BATCH = 5000


@dataclass
class Planned:
    """One trace row as a job request, before and after the simulation."""

    row: TraceRow
    team: str
    user: User
    fields: dict  # Job model fields
    requests: dict  # per pod, in the engine's resource names
    submit: float  # seconds after the start of the history


def trace_rows(path: Path = TRACE, *, days: int = DAYS) -> list[TraceRow]:
    """The first `days` days of the trace file, as offsets from its first row."""
    with Path(path).open() as f:
        raw = list(csv.DictReader(f))
    t0 = datetime.fromisoformat(raw[0]["timestamp"])
    rows = []
    for i, r in enumerate(raw):
        offset = (datetime.fromisoformat(r["timestamp"]) - t0).total_seconds()
        if offset >= days * 86400:
            break
        rows.append(TraceRow(i, offset, float(r["duration"]), int(r["num_gpus"]), r["cluster"]))
    return rows


def _fits(request, it: InstanceType) -> bool:
    return (
        it.accelerator_resource == "gpu"
        and request.accelerators <= it.accelerators
        and request.vcpus <= it.vcpus
        and request.memory_gib <= it.memory_gib
    )


def plan(rows: list[TraceRow]) -> list[Planned]:
    """Each row as the job a demo scientist of its team would submit (rows for absent teams are left out)."""
    allocations: dict[str, list[ComputeAllocation]] = defaultdict(list)
    for alloc in ComputeAllocation.objects.select_related("team", "instance_type"):
        allocations[alloc.team.name].append(alloc)
    users: dict[str, list[User]] = defaultdict(list)
    for user in User.objects.filter(role=Role.SCIENTIST, is_active=True).prefetch_related("teams").order_by("pk"):
        for team in user.teams.all():
            users[team.name].append(user)
    teams = {t.name: t for t in Team.objects.all()}
    types = {it.name: it for it in InstanceType.objects.all()}
    classes = {pc.name: pc for pc in PriorityClass.objects.all()}
    out = []
    for row in rows:
        team = team_for(row.vc)
        if team not in teams or not users.get(team):
            continue
        request = request_for(row, team, allocations[team])
        if request is None:
            continue
        it = types[request.instance_type]
        if request.pods == 1 and all(_fits(request, a.instance_type) for a in allocations[team]):
            it = None  # a one-pod job that fits any of the team's types leaves the choice to the engine
        duration = max(1, min(MAX_DURATION_S, math.ceil(row.duration_s * DURATION_SCALE)))
        per_pod = {"cpu": request.vcpus, "memory": request.memory_gib}
        if request.accelerators:
            per_pod[it.accelerator_key if it else "gpu"] = request.accelerators
        user = users[team][row.index % len(users[team])]
        fields = dict(
            team=teams[team],
            submitted_by=user,
            name=f"{request.name.rsplit('-r', 1)[0]}{NAME_SUFFIX}{row.index:05d}",
            image=request.image,
            command=request.command,
            instance_type=it,
            accelerators=request.accelerators,
            vcpus=request.vcpus,
            memory_gib=request.memory_gib,
            pods=request.pods,
            priority_class=classes.get(request.priority_class),
            expected_duration_s=duration,
        )
        out.append(Planned(row, team, user, fields, per_pod, row.offset_s))
    return out


class RecordingSimulation(Simulation):
    """The engine's simulator, also recording the team standings every `step` seconds and each admission's
    borrowing (what the live loop stores on the job)."""

    def __init__(self, scenario: Scenario, *, step: float, end: float, on_sample):
        super().__init__(scenario)
        self.step, self.end, self.on_sample = step, end, on_sample
        self.next_sample = 0.0
        self.borrowed: dict[str, bool] = {}
        self.pending: dict = {}
        self.by_submit = sorted(self.jobs, key=lambda j: j.submit)
        self.submitted = 0

    def _record(self, now: float) -> None:
        while self.submitted < len(self.by_submit) and self.by_submit[self.submitted].submit <= now:
            self.pending[self.by_submit[self.submitted]] = None
            self.submitted += 1
        for entry in self.s.log:
            if entry[0] == "admitted":
                self.borrowed[entry[1].name] = bool(entry[3])
                self.pending.pop(entry[1], None)
            else:
                self.pending[entry[1]] = None
        super()._record(now)
        following = self.heap[0][0] if self.heap else math.inf
        while self.next_sample < following and self.next_sample <= self.end:
            if self.next_sample >= now:
                self.on_sample(self.next_sample, self.standings(), self.pending_demand())
            self.next_sample += self.step

    def standings(self) -> dict:
        return {team.name: team_status(self.s, team) for team in self.s.teams}

    def pending_demand(self) -> dict[tuple[str, str], dict[str, float]]:
        """What queued jobs ask for, per (team, instance type), by the engine's rule (wanted type, else home)."""
        out: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
        resources, flavors = self.s.resources, self.s.flavor_names
        for job in self.pending:
            flavor = job.want if job.want is not None else job.team.home
            if flavor is None:
                continue
            row = out[(job.team.name, flavors[flavor])]
            for r in job.nz:
                row[resources[r]] += job.total[r]
            row["jobs"] += 1
        return out


def simulate(planned: list[Planned], *, start: datetime, end: datetime, on_sample) -> RecordingSimulation:
    lowest = lowest_priority()
    specs = [
        WorkloadSpec(
            name=str(i),
            team=p.team,
            requests=p.requests,
            pods=p.fields["pods"],
            priority=p.fields["priority_class"].weight if p.fields["priority_class"] else lowest,
            submit=p.submit,
            instance_type=p.fields["instance_type"].name if p.fields["instance_type"] else None,
            duration=float(p.fields["expected_duration_s"]),
            running_on=None,
            since=None,
        )
        for i, p in enumerate(planned)
    ]
    horizon = (end - start).total_seconds()
    scenario = Scenario(engine_instance_types(), engine_teams(), engine_policy(), specs, horizon)
    sim = RecordingSimulation(scenario, step=SAMPLE_SECONDS, end=horizon, on_sample=on_sample)
    sim.run()
    return sim


def _at(start: datetime, t: float) -> datetime:
    return start + timedelta(seconds=t)


def _write_jobs(planned: list[Planned], sim: RecordingSimulation, *, start: datetime) -> tuple[int, int]:
    """The jobs and their events, as the simulation left them."""
    types = {it.name: it for it in InstanceType.objects.all()}
    by_index: dict[int, list[dict]] = defaultdict(list)
    for event in sim.events:
        by_index[int(event["workload"])].append(event)
    jobs = []
    for i, (p, ejob) in enumerate(zip(planned, sim.jobs, strict=True)):
        job = Job(**p.fields, submitted_at=_at(start, p.submit), preemption_count=ejob.preemptions)
        last_admit = next((e for e in reversed(by_index[i]) if e["type"] == "admitted"), None)
        if last_admit is not None:
            job.assigned_instance_type = types[last_admit["instance_type"]]
            job.admitted_at = job.started_at = _at(start, last_admit["t"])
            job.borrowed = sim.borrowed.get(str(i), False)
        if ejob.state == "running":
            job.state = JobState.RUNNING
            job.placement = list(ejob.nodes) if ejob.nodes is not None else None
            job.backend_ref = f"sim/{p.fields['team'].namespace}/{job.name}-history"
            job.reason = f"running: {job.pods} pod{'s' if job.pods > 1 else ''} on {job.assigned_instance_type.name}"
        elif ejob.state == "finished":
            failed = unit_hash(i, "history-fail") < FAILURE_RATE
            job.state = JobState.FAILED if failed else JobState.SUCCEEDED
            job.finished_at = _at(start, ejob.finished_at)
            job.reason = "failed: the container exited with code 1" if failed else "finished successfully"
        else:
            job.state = JobState.PENDING
            job.admitted_at = job.started_at = None
            job.assigned_instance_type = None
            job.borrowed = False
            job.reason = "waiting for the scheduler"
        jobs.append(job)
    Job.objects.bulk_create(jobs, batch_size=BATCH)
    events = []
    for i, job in enumerate(jobs):
        state = JobState.PENDING
        events.append(JobEvent(job_id=job.pk, at=job.submitted_at, from_state="", to_state=state, reason="submitted"))
        for e in by_index[i]:
            at = _at(start, e["t"])
            if e["type"] == "admitted":
                admission = engine.Admission(str(i), e["instance_type"], None, sim.borrowed.get(str(i), False))
                events.append(JobEvent(job_id=job.pk, at=at, from_state=state, to_state=JobState.ADMITTED,
                                       reason=admission_reason(admission)))  # fmt: skip
                events.append(JobEvent(job_id=job.pk, at=at, from_state=JobState.ADMITTED, to_state=JobState.RUNNING,
                                       reason="running on the simulated cluster"))  # fmt: skip
                state = JobState.RUNNING
            elif e["type"] == "preempted":
                by = jobs[int(e["by"])]
                preemptor = SimpleNamespace(pk=by.pk, name=by.name, team_name=by.team.name)
                events.append(JobEvent(job_id=job.pk, at=at, from_state=state, to_state=JobState.PREEMPTED,
                                       reason=preemption_reason(job, preemptor, e["reason"])))  # fmt: skip
                events.append(JobEvent(job_id=job.pk, at=at, from_state=JobState.PREEMPTED,
                                       to_state=JobState.PENDING, reason=f"back in the queue after being "
                                       f"preempted by job #{by.pk}"))  # fmt: skip
                state = JobState.PENDING
            elif e["type"] == "finished":
                events.append(JobEvent(job_id=job.pk, at=at, from_state=state, to_state=job.state, reason=job.reason))
    JobEvent.objects.bulk_create(events, batch_size=BATCH)
    return len(jobs), len(events)


def history_load(*, days: int = DAYS, trace: Path = TRACE, now: datetime | None = None) -> dict:
    """Replay `days` days of the trace ending now and write what it implies. Returns counts and timings."""
    timings = {}
    t0 = time.perf_counter()
    end = (now or timezone.now()).replace(microsecond=0)
    start = end - timedelta(days=days)
    planned = plan(trace_rows(trace, days=days))
    team_ids = dict(Team.objects.values_list("name", "pk"))
    types = list(InstanceType.objects.all())
    type_ids = {it.name: it.pk for it in types}
    samples: list[UsageSample] = []

    def on_sample(t: float, standings: dict, demand: dict) -> None:
        keyed = {
            (team_ids[team], type_ids[type_name]): {
                "acc": sum(v for r, v in amounts.items() if r not in ("cpu", "memory", "jobs")),
                "cpu": amounts.get("cpu", 0),
                "mem": amounts.get("memory", 0),
                "jobs": amounts.get("jobs", 0),
            }
            for (team, type_name), amounts in demand.items()
            if team in team_ids and type_name in type_ids
        }
        samples.extend(
            sample_rows(
                at=_at(start, t), seconds=SAMPLE_SECONDS, standings=standings, demand=keyed, teams=team_ids, types=types
            )
        )

    sim = simulate(planned, start=start, end=end, on_sample=on_sample)
    timings["simulate_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    with transaction.atomic():
        jobs, events = _write_jobs(planned, sim, start=start)
        UsageSample.objects.bulk_create(samples, batch_size=BATCH)
    timings["write_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    hours = usage_rollup(granularity=Granularity.HOUR, start=start, end=end + timedelta(hours=1))
    day_rows = usage_rollup(granularity=Granularity.DAY, start=start, end=end + timedelta(days=1))
    timings["rollup_s"] = time.perf_counter() - t2
    timings["total_s"] = time.perf_counter() - t0
    preemptions = sum(1 for e in sim.events if e["type"] == "preempted")
    return {
        "days": days,
        "jobs": jobs,
        "events": events,
        "preemptions": preemptions,
        "samples": len(samples),
        "hourly": hours,
        "daily": day_rows,
        "running": sum(1 for j in sim.jobs if j.state == "running"),
        "pending": sum(1 for j in sim.jobs if j.state == PENDING),
        **{k: round(v, 1) for k, v in timings.items()},
    }
