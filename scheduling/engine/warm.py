"""A Scheduler kept warm between admission passes: the few state changes `decide()` never needs.

`decide(snapshot)` builds a Scheduler, settles it once and throws it away. The live scheduler process keeps
one (see scheduling/warm.py) and feeds it what happened since its last pass: a job submitted, one that
finished, was cancelled, or was admitted or preempted by someone else. These functions apply such changes
without touching the scheduler's invariants, and `decisions()` turns a settled Scheduler into the same
Decisions that `decide()` returns (the one place that conversion lives for the warm path; `decide()` could
call it too).
"""

from __future__ import annotations

from .admission import Scheduler
from .explain import explain
from .model import Admission, Decisions, Preemption
from .plans import plans
from .queues import FINISHED, PENDING, RUNNING, Job
from .status import team_status


def running_names(s: Scheduler) -> set[str]:
    """Names of the workloads running now (cheap: only running work is visited)."""
    return {job.name for team in s.teams for per_flavor in team.running for job in per_flavor}


def decisions(
    s: Scheduler, was_running: set[str], *, teams: bool = True, explain_only=None, estimate=None
) -> Decisions:
    """What the settle recorded in `s.log`, as Decisions: admissions of work still running at the end,
    preemptions of work that was running before it, the reason of every pending workload (or only of those
    named in `explain_only`), with `teams` each team's status, and with `estimate` (a tuple of names, as
    decide()'s) every pending workload's plan. decide() builds the same from a fresh Scheduler."""
    admissions, preemptions = {}, {}
    for entry in s.log:
        if entry[0] == "admitted":
            job, flavor, borrows = entry[1], entry[2], entry[3]
            admissions[job.name] = Admission(job.name, s.flavor_names[flavor], job.nodes, borrows)
        else:
            job, by, reason = entry[1], entry[2], entry[3]
            admissions.pop(job.name, None)
            if job.name in was_running:
                preemptions[job.name] = Preemption(job.name, by.name, reason)
    admissions = {n: a for n, a in admissions.items() if s.jobs[n].state == RUNNING}
    return Decisions(
        admissions=list(admissions.values()),
        preemptions=list(preemptions.values()),
        reasons=reasons_for(s, list(s.jobs) if explain_only is None else explain_only),
        teams={team.name: team_status(s, team) for team in s.teams} if teams else {},
        plans=plans(s, estimate) if estimate is not None else {},
    )


def reasons_for(s: Scheduler, names) -> dict[str, str]:
    """Why each named workload that is pending waits. A reason depends only on the team's state, the
    workload's shape (requests, pods, priority, instance type, duration) and whether it heads its team's
    queue, so identical workloads of a team share one explanation: thousands cost one per shape."""

    memo: dict[tuple, str] = {}
    out = {}
    for name in names:
        job = s.jobs.get(name)
        if job is not None and job.state == PENDING:
            key = (job.team.name, job.sig, job.team.queue.first() is job)  # as _reasons()
            if key not in memo:
                memo[key] = explain(s, job)
            out[name] = memo[key]
    return out


def pending_count(s: Scheduler) -> int:
    return sum(team.queue.size for team in s.teams)


def settle(s: Scheduler, now: float, *, teams: bool = True, explain_only=None) -> Decisions:
    """One pass: settle at `now` and return what changed since the last pass (reasons for every pending
    workload, or for those named in `explain_only`)."""
    s.log = []
    was_running = running_names(s)
    s.settle(now)
    return decisions(s, was_running, teams=teams, explain_only=explain_only)


def withdraw(s: Scheduler, job: Job) -> None:
    """Take a pending workload out of its team's queue (cancelled, or admitted elsewhere)."""
    if job.state != PENDING:
        raise ValueError(f"{job.name} is {job.state}, not pending")
    team = job.team
    team.queue.remove(job)
    s._queue_changed(team)
    s._demand(job, team.pending_demand, -1)
    job.state = FINISHED
    s.dirty.add(team.idx)


def requeue(s: Scheduler, job: Job) -> None:
    """A running workload that was put back in the queue by someone else (not by this scheduler)."""
    if job.state != RUNNING:
        raise ValueError(f"{job.name} is {job.state}, not running")
    s._stop(job)
    job.flavor = job.nodes = None
    job.admitted_at = None
    s.submit(job)


def place(s: Scheduler, job: Job, flavor: str, nodes: list[int] | None, since: float) -> None:
    """Record a pending or new workload as running where someone else admitted it."""
    if job.state == PENDING:
        withdraw(s, job)
    index = s.fidx[flavor]
    try:
        s.start_running(job, index, nodes, since)
    except ValueError:
        s.start_running_unplaced(job, index, since)


def forget(s: Scheduler, job: Job, now: float) -> None:
    """A workload that left for good (finished, failed, cancelled): free what it held and drop it."""
    if job.state == RUNNING:
        s.finish(job, now)
    elif job.state == PENDING:
        withdraw(s, job)
    s.jobs.pop(job.name, None)
