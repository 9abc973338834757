"""History for demos, tests and benchmarks: the Philly sample spread over N days, submitted by the demo teams
(sizes and priorities as demo traffic gives them), run through the engine's simulator under the current
configuration, and written to the database as jobs with their events, exactly as if the admission loop had
lived through them. A replay of that window under the unchanged configuration must find the same outcome.

This writes jobs that never ran on a cluster: use it on a demo, test or benchmark database only.
"""

from __future__ import annotations

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
def record_simulated_history(*, days: int, end: datetime | None = None, repeat: int = 1, stride: int = 1) -> dict:
    """Write `days` of simulated history ending at `end` (now): every `stride`-th row of the Philly sample,
    `repeat` times over. Returns counts and the window."""
    end = end or timezone.now().replace(microsecond=0)
    start = end - timedelta(days=days)
    jobs = _jobs(start, days, repeat, stride)
    history = History(start, end, _records(jobs, start), 0)
    output = simulate_scenario(build_scenario(history, current_config()))
    events = [JobEvent(job=j, at=j.submitted_at, to_state=JobState.PENDING, reason="submitted") for j in jobs]
    events += _outcome_events(jobs, output, start)
    Job.objects.bulk_create(jobs, batch_size=2000)
    for event in events:
        event.job = event.job  # the job's id, now that it has one
    JobEvent.objects.bulk_create(events, batch_size=5000)
    return {"jobs": len(jobs), "start": start, "end": end, "events": len(output["events"])}


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
