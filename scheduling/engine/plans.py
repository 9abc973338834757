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
    for name in estimate:
        job = s.jobs.get(name)
        if job is not None and job.state == PENDING and not out[name].head:
            start, flavor = estimated_start(s, job, team_order[job.team.idx])
            out[name].estimated_start = start
            out[name].instance_type = flavor
    return out


def estimated_start(s: Scheduler, job: Job, team_queue: list[Job]) -> tuple[float | None, str | None]:
    """When `job` could start if every head held its reservation and the workloads ahead of it in its
    team's queue started one after the other as early as the plan allows (None: no finite start known)."""
    ahead = team_queue[1 : team_queue.index(job)]
    if len(ahead) > MAX_AHEAD:
        return None, None
    heads = s.current_plan().heads if s.backfill else s.heads()  # the heads the plan itself holds for
    trial = s.planner.plan(heads + ahead + [job])
    hold = trial.holds.get(job)
    if hold is None or hold.start == INF:
        return None, None
    return hold.start, s.flavor_names[hold.f]
