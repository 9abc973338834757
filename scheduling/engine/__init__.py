"""The scheduling engine: who runs where, who waits and why. Pure Python (no Django, no kubernetes).

One entry point, `decide(snapshot) -> Decisions`, settles a cluster snapshot at `snapshot.now`:
it repeats admission and preemption until nothing changes and reports what to start, what to evict
and why everything else waits. `simulate_scenario(data)` runs the same machinery over time for a
scenario in the simulate format (../shared/spec/scenario-format.md).

Inputs (see model.py)
    InstanceType(name, capacity per node, count)   count None = no cluster limit, quota is the only one
    Team(name, quota, cohort, ...)                  quota already resolved: resolve_quota() and
                                                    proportional_defaults() turn {"gpu": 2} or
                                                    {"count": 3} into every resource of the type
    Workload(name, team, requests per pod, pods, priority, submit, instance_type,
             running_on / nodes / admitted_at for work already admitted)
    Policy(task_prioritization "fcfs"|"task-ranking", idle_compute "fair-share"|"fcfs")

Rules
    Quota      A team uses up to its nominal quota; with sharing LendAndBorrow it borrows from its
               cohort's pool (members' lendable quota, plus capacity no team's quota covers) up to
               borrow_limit_pct of nominal or an absolute borrowing_limit. Lend lends but never
               borrows; DontLend does neither; cohort None shares with nobody.
    Admission  A workload is admitted when requests x pods fits its team's quota plus what it may
               borrow and, where nodes are known, every pod fits on a node (gangs: all or none).
               Instance types are tried in the team's quota order: first one that fits without
               borrowing, then with borrowing, then with preemption.
    Ordering   Within a team by submit time (fcfs) or priority then submit time (task-ranking); a
               workload that cannot start does not block those behind it. Across teams the lowest
               dominant share after admission goes first (fair-share), or non-borrowing requests
               first and then the earliest (fcfs).
    Preemption "reclaim": a team within its nominal quota takes back quota lent to borrowers.
               "fair-share": a team below its fair share takes borrowed work from a team above it,
               never pushing it below nominal nor below the claimant's share after admission.
               "priority": a team's higher-priority work evicts its own lower-priority work where
               preempt_team_tasks / within_team allow. Victims: one that suffices if any, else lowest
               priority and most recently admitted first, then any not needed are given back.
    Fair share Per instance type and resource: nominal up to demand, then the cohort's remaining
               pool split by weight among teams wanting more (capped by demand and borrowing limit);
               weight 0 gets only what nobody else wants.

Output: Decisions(admissions, preemptions (with "by" and reason), reasons for every pending
workload in plain words with numbers, per-team TeamStatus).
"""

from __future__ import annotations

from .admission import Scheduler
from .collector import collector_paused
from .model import (
    Admission,
    Decisions,
    InstanceType,
    Plan,
    Policy,
    Preemption,
    Snapshot,
    Team,
    TeamStatus,
    Workload,
)
from .queues import RUNNING
from .quota import proportional_defaults, resolve_quota
from .scenario import ScenarioError
from .simulator import resources_of, simulate_scenario

__all__ = [
    "Admission", "Decisions", "InstanceType", "Plan", "Policy", "Preemption", "ScenarioError", "Snapshot", "Team",
    "TeamStatus", "Workload", "decide", "standing", "proportional_defaults", "resolve_quota", "simulate_scenario",
]  # fmt: skip


def build_scheduler(snapshot: Snapshot) -> Scheduler:
    """A scheduler holding the snapshot's state: running work placed, pending work queued."""
    with collector_paused():
        return _build(snapshot)


def _build(snapshot: Snapshot) -> Scheduler:
    types = list(snapshot.instance_types)
    known = {it.name for it in types}
    for name in [f for team in snapshot.teams for f in team.quota] + [
        w.instance_type or w.running_on for w in snapshot.workloads
    ]:
        if name and name not in known:
            types.append(InstanceType(name, {}, None))
            known.add(name)
    resources = resources_of(types, snapshot.teams, (w.requests for w in snapshot.workloads))
    s = Scheduler(types, snapshot.teams, snapshot.policy, resources)
    s.now = snapshot.now
    running = []
    for seq, w in enumerate(snapshot.workloads):
        job = s.make_job(w.name, seq, w.team, w.requests, w.pods, w.priority, w.submit, w.instance_type, w.duration)
        if w.running_on:
            running.append((w.admitted_at if w.admitted_at is not None else w.submit, seq, w, job))
        else:
            s.submit(job)
    for since, _, w, job in sorted(running, key=lambda item: item[:2]):
        flavor = s.fidx[w.running_on]
        try:
            s.start_running(job, flavor, w.nodes, since)
        except ValueError:
            s.start_running_unplaced(job, flavor, since)
    return s


def decide(snapshot: Snapshot, *, estimate: tuple[str, ...] = (), teams: bool = True) -> Decisions:
    """Settle `snapshot` at `snapshot.now` and return what changes and why everything else waits.

    `plans` gives every pending workload its rank in planning order and in its team's queue; heads with a
    reservation get their planned start. Workloads named in `estimate` also get a conservative estimated
    start from the same plan (it costs a planning pass each, so the pages ask for the one they show).
    With `teams=False` the teams' status is left out (the admission loop does not write it).
    """
    from .warm import decisions  # the one conversion of a settled Scheduler, shared with the warm path

    s = build_scheduler(snapshot)
    was_running = {job.name for job in s.jobs.values() if job.state == RUNNING}
    s.wake_all()
    s.settle(snapshot.now)
    return decisions(s, was_running, estimate=estimate, teams=teams)


def _reasons(s: Scheduler) -> dict[str, str]:
    """Why each pending workload waits (one explanation per team, shape and head-ness; see warm.reasons_for)."""
    from .warm import reasons_for

    return reasons_for(s, list(s.jobs))


def standing(snapshot: Snapshot, *, estimate: tuple[str, ...] = ()) -> Decisions:
    """Where things stand now, deciding nothing: every team's status (usage of what runs, fair share from
    running and pending demand) and every pending workload's place in the plan, without a settle. What the
    pages read between loop passes; cheaper than decide() by the whole settle and every explanation."""
    from .plans import plans
    from .status import team_status

    s = build_scheduler(snapshot)
    return Decisions(
        admissions=[],
        preemptions=[],
        reasons={},
        teams={team.name: team_status(s, team) for team in s.teams},
        plans=plans(s, estimate),
    )
