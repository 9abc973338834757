"""What the pages ask of the plan: each pending workload's rank, its team's head's reservation, and
conservative start estimates, all read off the scheduler's own plan (reservations.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import Plan
from .queues import PENDING
from .quota import INF
from .reservations import planning_key

if TYPE_CHECKING:
    from .admission import Scheduler
    from .queues import Job

MAX_AHEAD = 200  # an estimate plans at most this many of the team's workloads ahead of the one asked about


def plans(s: Scheduler, estimate=()) -> dict[str, Plan]:
    pending = [job for job in s.jobs.values() if job.state == PENDING]
    if not pending:
        return {}
    pending.sort(key=planning_key)
    team_order: dict[object, list[Job]] = {}
    for job in pending:
        team_order.setdefault(job.team.idx, []).append(job)
    team_rank = {}
    for jobs in team_order.values():
        jobs.sort(key=lambda j: j.key)
        for i, job in enumerate(jobs, 1):
            team_rank[job] = i
    plan = s.current_plan() if s.backfill else None
    out = {}
    for rank, job in enumerate(pending, 1):
        head = team_rank[job] == 1
        entry = Plan(rank=rank, team_rank=team_rank[job], head=head)
        hold = plan.holds.get(job) if plan is not None and head else None
        if hold is not None:
            entry.planned_start = entry.estimated_start = hold.start
            entry.instance_type = s.flavor_names[hold.f]
            entry.waits_for = [w.name for w in hold.waits_for]
        out[job.name] = entry
    asked: dict[object, list[Job]] = {}
    for name in estimate:
        job = s.jobs.get(name)
        if job is not None and job.state == PENDING and not out[name].head:
            asked.setdefault(job.team.idx, []).append(job)
    for idx, jobs in asked.items():
        for job, (start, flavor) in estimated_starts(s, jobs, team_order[idx]).items():
            out[job.name].estimated_start = start
            out[job.name].instance_type = flavor
    return out


def estimated_starts(s: Scheduler, jobs: list[Job], team_queue: list[Job]) -> dict[Job, tuple]:
    """When each of `jobs` (waiting workloads of one team, not its head) could start if every head held its
    reservation and the workloads ahead of it in its team's queue started one after the other as early as
    the plan allows ((None, None): no finite start known). One plan serves them all: the planner places
    workloads strictly in the order given, so the plan of the queue up to the last one asked about holds
    each of them exactly where the plan up to that one alone would."""
    place = {job: team_queue.index(job) for job in jobs}
    out: dict[Job, tuple] = {job: (None, None) for job in jobs}
    within = [job for job in jobs if place[job] - 1 <= MAX_AHEAD]
    if not within:
        return out
    last = max(place[job] for job in within)
    heads = s.current_plan().heads if s.backfill else s.heads()  # the heads the plan itself holds for
    trial = s.planner.plan(heads + team_queue[1 : last + 1])
    for job in within:
        hold = trial.holds.get(job)
        if hold is not None and hold.start != INF:
            out[job] = (hold.start, s.flavor_names[hold.f])
    return out
