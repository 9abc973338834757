"""Reservations (nobody starves), as properties over random clusters and arrival streams with durations.

1. No admission moves a reservation later: for every head the admitted workload must respect (heads before
   it in planning order, and its own team's head), the planned start of the same heads after the admission
   is no later than before, except where the workload stays within its team's nominal quota (quota is a guarantee; this
   exception covers other teams' heads only) or is admitted by preemption (not held back).
2. Every workload with a finite duration that fits the cluster eventually starts: with no preemption
   (fcfs, nobody preempts) and every duration finite, a long enough run finishes everything.
"""

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine.admission import Scheduler
from scheduling.engine.quota import EPS
from scheduling.engine.reservations import planning_key
from scheduling.engine.scenario import parse_scenario
from scheduling.engine.simulator import Simulation, simulate_scenario

from .helpers import with_and_without


@st.composite
def streams(draw, preemption: bool = True):
    gpus = draw(st.sampled_from([4, 8]))
    nodes = draw(st.integers(1, 3))
    teams = []
    for i in range(draw(st.integers(1, 3))):
        teams.append(
            {
                "name": f"t{i}",
                "cohort": "c",
                "quota": {"n": {"gpu": draw(st.integers(0, gpus * nodes))}},
                "preempt_team_tasks": draw(st.sampled_from(["Never", "LowerPriority"])) if preemption else "Never",
                "reclaim_within_cohort": draw(st.sampled_from(["Any", "Never"])) if preemption else "Never",
            }
        )
    workloads = []
    for j in range(draw(st.integers(1, 14))):
        pods = draw(st.sampled_from([1, 1, 1, 2, nodes]))
        per_node = -(-pods // nodes)  # pods that must share a node: every workload fits the empty cluster
        per_pod = draw(st.integers(1, gpus // per_node))
        workloads.append(
            {
                "name": f"w{j}",
                "team": f"t{draw(st.integers(0, len(teams) - 1))}",
                "submit": draw(st.integers(0, 60)),
                "pods": pods,
                "requests": {"gpu": per_pod, "cpu": per_pod},
                "priority": draw(st.sampled_from([0, 0, 1, 2])),
                "duration": draw(st.integers(1, 100)),
                "instance_type": "n",
            }
        )
    return {
        "cluster": {"instance_types": [{"name": "n", "count": nodes, "capacity": {"gpu": gpus, "cpu": gpus}}]},
        "policy": {
            "task_prioritization": draw(st.sampled_from(["fcfs", "task-ranking"])),
            "idle_compute": draw(st.sampled_from(["fcfs", "fair-share"])) if preemption else "fcfs",
        },
        "teams": teams,
        "workloads": workloads,
        "until": 0,
    }


def _respected(s: Scheduler, job, f: int):
    """The heads `job` must not delay, as the specification names them."""
    book = job.team.book
    within = all(book.usage[f][r] + job.total[r] <= book.nominal[f][r] + EPS for r in range(len(job.total)))
    out = []
    for team in s.teams:
        if not team.queue.size:
            continue
        head = team.queue.first()
        if head is job or head in s.deferred:  # deferred: the same settle would evict it (no reservation)
            continue
        if team is job.team or (not within and planning_key(head) < planning_key(job)):
            out.append(head)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.sampled_from([0, 0, 1, 7]))
def test_no_admission_moves_a_reservation_later(data, late):
    """Also where work ends later than expected (`late`: every other workload's end is seen that many seconds
    after its expected end, as a live cluster reports ends): the plan supposes overdue work ends now."""
    import heapq

    from scheduling.engine import simulator

    data["until"] = 400 if late else data["until"]
    sim = Simulation(parse_scenario(data))
    s = sim.s
    if late:

        def schedule_finish(job, start):
            if job.duration is not None:
                end = start + job.duration + late * (job.seq % 2)
                heapq.heappush(sim.heap, (end, simulator.FINISH, job.seq, job, job.run))

        sim._schedule_finish = schedule_finish
    original = Scheduler._admit
    checked = []

    def admit(job, plan):
        f, _, _, victims = plan
        before = {}
        if not victims:
            base = s.current_plan()
            heads = [h for h in base.heads if h is not job]
            before = {h: base.start(h) for h in _respected(s, job, f)}
        original(s, job, plan)
        if before:
            # the same heads planned again (a head the admission uncovers in its team's queue joins the plan
            # in its own right; that is queue progress, not the admitted workload taking room)
            after = s.planner.plan(heads)
            for head, start in before.items():
                if head.state == "pending" and head in after.holds:
                    assert after.start(head) <= start + 1e-6, (job.name, head.name, start, after.start(head))
                    checked.append(head)

    s._admit = admit
    sim.run()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(preemption=False))
def test_every_finite_workload_that_fits_eventually_starts(data):
    data["until"] = 100_000
    out = simulate_scenario(data)
    for name, w in out["workloads"].items():
        assert w["state"] == "finished", (name, w)


def test_without_reservations_the_gang_can_starve_and_with_them_it_cannot():
    """The first release's complaint, in miniature: a stream of short jobs keeps one node busy forever."""
    workloads = [
        {"name": "gang", "team": "t", "submit": 1, "pods": 2, "requests": {"gpu": 8}, "duration": 60},
    ] + [{"name": f"s{i}", "team": "t", "submit": 10 * i, "requests": {"gpu": 4}, "duration": 25} for i in range(40)]
    base = {
        "cluster": {"instance_types": [{"name": "n", "count": 2, "capacity": {"gpu": 8}}]},
        "teams": [{"name": "t", "cohort": None, "quota": {"n": {"count": 2}}}],
        "workloads": workloads,
        "until": 400,
    }
    starved = simulate_scenario({**base, "policy": {"backfill": "none"}})["workloads"]["gang"]
    served = simulate_scenario({**base, "policy": {"backfill": "reserve"}})["workloads"]["gang"]
    assert starved["state"] == "pending"
    assert served["state"] in ("running", "finished") and served["admitted_at"] <= 60


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_no_eviction_is_undone_at_the_same_instant(data):
    """A workload evicted and readmitted within one settle would restart for nothing: it never happens."""
    data["until"] = 200
    _assert_no_eviction_undone(simulate_scenario(data))


def _assert_no_eviction_undone(out):
    evicted = set()
    for event in out["events"]:
        if event["type"] == "preempted":
            evicted.add((event["t"], event["workload"]))
        elif event["type"] == "admitted":
            assert (event["t"], event["workload"]) not in evicted, event


def _holds(plan):
    return {
        h.name: (None if plan.holds[h] is None else (round(plan.holds[h].start, 6), plan.holds[h].f))
        for h in plan.heads
    }


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.booleans())
def test_the_plan_kept_between_events_is_the_plan_made_afresh(data, quota_only):
    """The scheduler keeps a scope's plan while the state changes only as the plan foresaw (work ending when
    expected, admissions checked against it, heads changing behind the first change): after every settle
    and every event, the plan it holds gives every head the same hold as a plan made from scratch."""
    if quota_only:
        del data["cluster"]  # the instance type is known from the quotas alone: no nodes, no capacity limit
    data["until"] = 300
    sim = Simulation(parse_scenario(data))
    s = sim.s
    original = Scheduler.settle
    compared = []

    def settle(now):
        for phase in ("events", "settled"):
            if phase == "settled":
                original(s, now)
            s.now = now
            for scope in {s.scope(t) for t in s.teams if t.queue.size}:
                kept = s.current_plan(scope)
                fresh = s.planner.plan(s.heads(scope))
                assert _holds(kept) == _holds(fresh), (phase, now, _holds(kept), _holds(fresh))
                compared.append(scope)

    s.settle = settle
    sim.run()


def test_a_plan_left_behind_by_time_or_overdue_work_is_made_again():
    """Work that runs past its expected end: the plan made before supposed it would end, and a head's hold
    that time has passed is planned again from now, as a fresh plan would."""
    data = {
        "cluster": {"instance_types": [{"name": "n", "count": 1, "capacity": {"gpu": 8}}]},
        "teams": [{"name": "t", "cohort": None, "quota": {"n": {"gpu": 8}}}],
        "workloads": [
            {
                "name": "r1",
                "team": "t",
                "requests": {"gpu": 4},
                "duration": 10,
                "running": {"instance_type": "n", "since": 0},
            },
            {
                "name": "r2",
                "team": "t",
                "requests": {"gpu": 4},
                "duration": 30,
                "running": {"instance_type": "n", "since": 0},
            },
            {"name": "g", "team": "t", "submit": 0, "requests": {"gpu": 8}, "duration": 5},
        ],
        "until": 0,
    }
    sim = Simulation(parse_scenario(data))
    sim.run()
    s = sim.s
    assert _holds(s.current_plan()) == {"g": (30.0, 0)}
    for now in (20.0, 29.0, 35.0):  # r1 overdue from 10, r2 from 30; neither has ended
        s.settle(now)
        fresh = s.planner.plan(s.heads(s.scope(s.teams[0])))
        assert _holds(s.current_plan()) == _holds(fresh) == {"g": (max(now, 30.0), 0)}
    s.finish(s.jobs["r1"], 36.0)  # late: the plan had supposed it gone, and kept holds start no earlier
    s.now = 36.0
    assert _holds(s.current_plan()) == _holds(s.planner.plan(s.heads(s.scope(s.teams[0])))) == {"g": (36.0, 0)}
    s.settle(36.0)  # g still waits for r2
    assert s.jobs["g"].state == "pending"
    s.finish(s.jobs["r2"], 37.0)
    s.settle(37.0)
    assert s.jobs["g"].state == "running"


def test_a_hold_kept_across_events_sits_on_the_nodes_a_fresh_plan_chooses():
    """Found by the property above: a plan kept from t=1 had placed w4's hold by the order in which nodes were
    last changed, and w3 planned after it found no room; a fresh plan at t=2 placed w4 elsewhere. Placement
    now depends only on what is free where."""
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parent / "regressions" / "kept-hold-placed-as-afresh.json").read_text())
    sim = Simulation(parse_scenario(data))
    s = sim.s
    original = Scheduler.settle

    def settle(now):
        s.now = now
        for scope in {s.scope(t) for t in s.teams if t.queue.size}:
            assert _holds(s.current_plan(scope)) == _holds(s.planner.plan(s.heads(scope))), now
        original(s, now)

    s.settle = settle
    sim.run()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(preemption=False))
def test_estimates_asked_together_are_the_estimates_asked_one_by_one(data):
    """Pages ask for several waiting workloads' estimates at once (the scheduler publishes them all): one
    plan of a team's queue must give each the start that planning the queue up to it alone gives."""
    from scheduling.engine.plans import plans

    data["until"] = 300
    sim = Simulation(parse_scenario(data))
    s = sim.s
    original = Scheduler.settle
    compared = []

    def settle(now):
        original(s, now)
        waiting = [job.name for job in s.jobs.values() if job.state == "pending"]
        if not waiting:
            return
        together = plans(s, estimate=waiting)
        for name in waiting:
            alone = plans(s, estimate=[name])[name]
            assert (together[name].estimated_start, together[name].instance_type) == (
                alone.estimated_start,
                alone.instance_type,
            ), (now, name)
            compared.append(name)

    s.settle = settle
    sim.run()


def _with_and_without_pruning(data):
    return with_and_without(Scheduler, "prune_refused_shapes", data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_skipping_candidates_a_reservation_refuses_decides_as_trying_each(data):
    """A team's candidates of one shape differ by duration alone; the scheduler skips those that run at least
    as long as one the first reservation refused. That must change no decision."""
    data["until"] = 300
    with_pruning, without = _with_and_without_pruning(data)
    assert with_pruning == without


def test_a_longer_job_can_delay_nobody_where_a_shorter_one_delays_a_head():
    """Why only a refusal by the first head prunes: here w8 (18 s) would delay t1's head w10, yet w13 (100 s,
    the same shape) delays nobody it must respect, because it pushes t0's head w3 past w10's whole run."""
    with_pruning, without = _with_and_without_pruning(_regression("longer-job-delays-nobody.json"))
    assert with_pruning == without
    assert without["workloads"]["w13"]["admitted_at"] == 106  # admitted beside the refused w8


def test_a_plain_pass_does_not_readmit_what_the_protected_pass_before_it_evicted():
    """Found by the property above: the protected retry (w3 protected) let w4 evict w2; the plain pass after
    it evicted w3 for w0 and readmitted w2 in the room, so w2 restarted for nothing. The settle now starts
    over with w2 protected too."""
    _assert_no_eviction_undone(simulate_scenario(_regression("eviction-readmitted-after-protected-pass.json")))


def _regression(name: str) -> dict:
    with open(os.path.join(os.path.dirname(__file__), "regressions", name)) as handle:
        return json.load(handle)
