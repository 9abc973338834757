#!/usr/bin/env python3
"""The largest cluster the bounds allow (scheduling/engine/bounds.py): 20,000 nodes and 1,000 teams.

Prints, never asserts. Builds a dedicated PostgreSQL database (portal_boundsbench, dropped and recreated):
10 instance types x 2,000 nodes, 1,000 teams with quota on two types each, and 3 queued jobs per team.
Then times, in this process (Django's test client, no web server):
  - one admission run from cold (everything pending: the engine admits thousands of jobs and places them),
  - one admission run in steady state (thousands running, 1,000 new jobs pending),
  - the team list page (/teams/), a team's page (/teams/<id>/) and its status API (/api/teams/<id>/status/),
  - the cluster full (every node busy), then 1,200 assorted jobs waiting (one in ten from a team below its
    quota, which may reclaim): the first pass, a steady pass (5 jobs finish, 50 arrive) and a pass reading the
    whole state, with the victim searches counted (see full_figures),
each the median of a few repetitions, and writes the figures to bench/results/bounds-<timestamp>.json.
The goal is under 1 s each. Engine-heavy passes are also given in CPU seconds of this process (median_cpu_s):
the wall time on a shared machine says more about the neighbours.

Usage: .venv/bin/python bench/bounds.py [--repeat 1] [--teams 1000] [--profile] [--db NAME] [--no-full]
                                       [--no-pages] [--dump FILE]
  --teams    fewer teams (the nodes stay 20,000), to see how the cost grows with the number of teams
  --profile  also print where the steady admission run, the full cluster's steady pass and its pass reading the
             whole state spend their time
             (cProfile, top 25 by cumulative time)
  --db       the database to drop and rebuild (default portal_boundsbench; BENCH_BOUNDS_DB), so parallel runs
             keep apart
  --no-full, --no-pages  skip the full-cluster phase, the pages
  --full-budget SECONDS  CPU the full cluster's first pass may use before it is stopped and reported as
                         unfinished (default 120)
  --dump     pickle the engine's state after the full cluster's steady passes (engine-only experiments)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DB_NAME = os.environ.get("BENCH_BOUNDS_DB", "portal_boundsbench")
for _i, _arg in enumerate(sys.argv):  # read before Django is configured: the settings take DATABASE_URL once
    if _arg == "--db" and _i + 1 < len(sys.argv):
        DB_NAME = sys.argv[_i + 1]
    elif _arg.startswith("--db="):
        DB_NAME = _arg.split("=", 1)[1]
ENV = {
    "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB_NAME}",
    "SECRET_KEY": "bench-only-secret-key-" + "x" * 40,
    "DEBUG": "false",
    "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
    "SECURE_SSL_REDIRECT": "false",
    "STATIC_MANIFEST": "false",
    "LOG_LEVEL": "WARNING",
    "CELERY_TASK_ALWAYS_EAGER": "true",
    "REDIS_URL": "",
}
os.environ.update(ENV)
os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings"

TYPES = [  # name, accelerator resource, accelerators, vCPUs, GiB
    ("ml.p5.48xlarge", "gpu", 8, 192, 2048),
    ("ml.p4d.24xlarge", "gpu", 8, 96, 1152),
    ("ml.p5e.48xlarge", "gpu", 8, 192, 2048),
    ("ml.g6.12xlarge", "gpu", 4, 48, 192),
    ("ml.g5.2xlarge", "gpu", 1, 8, 32),
    ("ml.trn1.32xlarge", "neuron", 16, 128, 512),
    ("ml.trn2.48xlarge", "neuron", 16, 192, 2048),
    ("ml.c5.2xlarge", "", 0, 8, 16),
    ("ml.c5.18xlarge", "", 0, 72, 144),
    ("ml.m5.24xlarge", "", 0, 96, 384),
]
NODES_PER_TYPE = 2_000
TEAMS = 1_000  # --teams for fewer, to see how the cost grows
JOBS_PER_TEAM = 3


def recreate_database():
    import psycopg

    with psycopg.connect("postgres://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def build(n_teams: int):
    from django.core.management import call_command

    from quotas.models import ClusterPolicy, ComputeAllocation, InstanceType, NodeGroup, PriorityClass, Role, Team, User
    from scheduling.engine import bounds
    from scheduling.models import Job

    call_command("migrate", verbosity=0)
    assert NODES_PER_TYPE * len(TYPES) == bounds.MAX_CLUSTER_NODES and n_teams <= bounds.MAX_TEAMS
    ClusterPolicy.load()
    PriorityClass.objects.create(name="training", weight=100)
    PriorityClass.objects.create(name="urgent", weight=1000)  # only the full-cluster phase's waiting jobs use it
    types = InstanceType.objects.bulk_create(
        [
            InstanceType(name=n, family=n.split(".")[1], accelerator_resource=r, accelerators=a, vcpus=c, memory_gib=m)
            for n, r, a, c, m in TYPES
        ]
    )
    NodeGroup.objects.bulk_create(
        [NodeGroup(name=f"{it.name}-nodes", instance_type=it, node_count=NODES_PER_TYPE) for it in types]
    )
    admin = User.objects.create_user(username="admin", password="x", role=Role.ADMIN)
    teams = Team.objects.bulk_create(
        [Team(name=f"team-{i:04d}", namespace=f"hyperpod-ns-team-{i:04d}", cohort="default",
              preempt_team_tasks="LowerPriority" if i % 10 == 0 else "Never") for i in range(n_teams)]
    )  # fmt: skip
    allocations, jobs = [], []
    for i, team in enumerate(teams):
        for k in (0, 1):
            it = types[(i + k * 3) % len(types)]
            # Each type's 2,000 nodes shared by the ~200 teams with quota on it: 10 instances each.
            allocations.append(ComputeAllocation(team=team, instance_type=it, instances=10))
        it = types[i % len(types)]
        for j in range(JOBS_PER_TEAM):
            per_pod = {"accelerators": it.accelerators} if it.accelerators else {"vcpus": it.vcpus // 2}
            jobs.append(
                Job(team=team, submitted_by=admin, name=f"job-{i}-{j}", image="pytorch:2", instance_type=it,
                    pods=1 + (i + j) % 4, memory_gib=16, expected_duration_s=3600, **per_pod)
            )  # fmt: skip
    ComputeAllocation.objects.bulk_create(allocations)
    Job.objects.bulk_create(jobs)
    return admin, teams


def warm_figures(figures: dict, admin, args):
    """The admission path the portal runs by default: the scheduler process (scheduling/warm.py) keeps the
    engine's state between passes. Its first pass reads everything; then 1,000 jobs are submitted (rows and
    their submit events, as the submit service writes them) and one pass admits them. Starting the admitted
    jobs on the cluster happens after the pass, in the scheduler's carrier thread, and is not timed here."""
    from scheduling.models import Job, JobEvent, JobState
    from scheduling.warm import WarmScheduler

    # as the scheduler process runs it (manage.py scheduler): the state it reads whole is frozen out of the cyclic
    # collector's sight, and the state it replaces is collected between passes (collect_garbage, timed apart)
    scheduler = WarmScheduler(carry_out=lambda: None, freeze_state=True)
    result = None

    def first():
        nonlocal result
        result = scheduler.run_pass(trigger="bench")

    with PassParts() as parts:
        figures["scheduler pass, state read whole"] = timed(first, 1)
    figures["scheduler pass, state read whole"].update(admitted=result.admitted, **parts.figures())
    runs = []
    for k in range(max(1, args.repeat) + (1 if args.profile else 0)):
        jobs = Job.objects.bulk_create(
            Job(team=j.team, submitted_by=admin, name=f"{j.name}-warm{k}", image="pytorch:2",
                instance_type=j.instance_type, pods=j.pods, accelerators=j.accelerators, vcpus=j.vcpus,
                memory_gib=j.memory_gib, expected_duration_s=3600)
            for j in Job.objects.filter(name__endswith="-1").select_related("team", "instance_type")
        )  # fmt: skip
        JobEvent.objects.bulk_create(
            JobEvent(job=j, at=j.submitted_at, to_state=JobState.PENDING, reason="submitted by bench") for j in jobs
        )
        if args.profile and k == 0:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            result = profiler.runcall(scheduler.run_pass, trigger="bench")
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
            continue
        t0 = time.perf_counter()
        result = scheduler.run_pass(trigger="bench")
        runs.append(time.perf_counter() - t0)
    figures["scheduler pass, 1,000 new jobs"] = {
        "median_s": round(statistics.median(runs), 3) if runs else None,
        "max_s": round(max(runs), 3) if runs else None,
        "runs": len(runs),
        "admitted": result.admitted,
        "pending": result.pending,
    }
    return scheduler


class SearchCounter:
    """Counts the engine's victim searches (find_victims calls, and those that got as far as the node by node
    ordering), by wrapping the module functions: works on the engine as it was before any search was bounded."""

    def __init__(self):
        from scheduling.engine import preemption

        self.module, self.calls, self.node_by_node = preemption, 0, 0
        self.find, self.nbn = preemption.find_victims, preemption._node_by_node

        def find(*a, **k):
            self.calls += 1
            return self.find(*a, **k)

        def nbn(*a, **k):
            self.node_by_node += 1
            return self.nbn(*a, **k)

        preemption.find_victims, preemption._node_by_node = find, nbn

    def take(self, scheduler=None) -> dict:
        out = {"victim searches": self.calls, "node by node": self.node_by_node}
        self.calls = self.node_by_node = 0
        engine = scheduler.state.scheduler if scheduler is not None and scheduler.state is not None else None
        if engine is not None and hasattr(engine, "searches"):  # searches run / skipped as known to fail
            out["run, skipped"] = tuple(engine.searches)
            engine.searches[:] = [0, 0]
        return out


def full_figures(figures: dict, admin, args, scheduler) -> None:
    """The cluster full (every node busy), then more than a thousand jobs waiting, most of which cannot preempt
    anyone: the passes that follow re-offer every blocked team (a finish on a type with nodes wakes them all),
    and each waiting job's victim search is the cost. Timed (CPU seconds of this process, and wall):
      - the first pass after 1,200 assorted jobs arrive in the full cluster (a few preempt),
      - a steady pass: 5 running jobs finish and 50 more assorted jobs arrive (median of --repeat),
      - a pass that reads the whole state afresh (every team offered; the consistency check does this a minute).
    """
    import random

    from quotas.models import InstanceType, PriorityClass, Team
    from scheduling.models import Job, JobEvent, JobState

    rng = random.Random(14)
    types = {it.pk: it for it in InstanceType.objects.all()}
    classes = dict(PriorityClass.objects.values_list("name", "pk"))
    teams = list(Team.objects.order_by("pk"))
    quota = {}  # team pk -> its two instance types
    for team in teams:
        quota[team.pk] = list(team.allocations.values_list("instance_type_id", flat=True)) or [next(iter(types))]

    def submit(jobs):
        jobs = Job.objects.bulk_create(jobs)
        JobEvent.objects.bulk_create(
            JobEvent(job=j, at=j.submitted_at, to_state=JobState.PENDING, reason="submitted by bench") for j in jobs
        )

    def unit(it, half=False):
        if it.accelerators:
            return {"accelerators": max(1, it.accelerators // 2) if half else it.accelerators}
        return {"vcpus": it.vcpus // (4 if half else 2)}

    # Fill: single-pod jobs taking a node's whole accelerators (or half its vCPUs, as the jobs already running),
    # asking no memory so that what the key resource counts is exactly what fits, until a pass admits nothing
    # more (fillers that cannot fit would make the filling itself the slow case measured below).
    s = scheduler.state.scheduler
    for round_ in range(6):
        fillers = []
        for f, pool in enumerate(s.pools):
            if pool is None:
                continue
            it = next(t for t in types.values() if t.name == s.flavor_names[f])
            owners = [t for t in teams if it.pk in quota[t.pk]] or teams
            per = unit(it)
            need = next(iter(per.values()))
            room = sum(int((free[pool.key] + 1e-6) // need) for free in pool.free)
            # the teams below their nominal quota first, up to it (most teams end at their quota, not below it:
            # only a few can reclaim), then round the owners
            order = []
            for t in owners:
                book = s.by_name[t.name].book
                order += [t] * max(0, int((book.nominal[f][pool.key] - book.usage[f][pool.key] + 1e-6) // need))
            order = (order + owners * (room // max(1, len(owners)) + 1))[:room]
            for k, owner in enumerate(order):
                fillers.append(Job(team=owner, submitted_by=admin, name=f"fill-{round_}-{f}-{k}",
                                   image="pytorch:2", instance_type=it, pods=1, memory_gib=0,
                                   expected_duration_s=3600, **per))  # fmt: skip
        if not fillers:
            break
        submit(fillers)
        result = scheduler.run_pass(trigger="bench")
        admitted = result.admitted
        while result.cut:  # a pass cut at the settle budget: the next ones go on (as the scheduler's loop does)
            result = scheduler.run_pass(trigger="bench")
            admitted += result.admitted
        print(f"  filling: {len(fillers)} submitted, {admitted} admitted, {result.pending} pending", flush=True)
        if not admitted:
            break
    free_nodes = sum(1 for pool in s.pools if pool is not None for free in pool.free if free[pool.key] > 1e-6)

    under = set()  # (team, type) where the team uses less than its nominal quota: its jobs may reclaim
    for team in teams:
        book = s.by_name[team.name].book
        for pk in quota[team.pk]:
            f = s.fidx[types[pk].name]
            key = s.pools[f].key  # the accelerators, else the vCPUs (the fillers ask no memory)
            if book.usage[f][key] < book.nominal[f][key] - 1e-6:
                under.add((team.pk, pk))

    def assorted(n, tag):
        jobs = []
        for k in range(n):
            while True:  # one in ten from a team below its quota there (it may reclaim), the rest not
                team = teams[rng.randrange(len(teams))]
                it = types[rng.choice(quota[team.pk])]
                if ((team.pk, it.pk) in under) == (k % 10 == 0) or not under or len(under) == 2 * len(teams):
                    break
            urgent = rng.random() < 0.1
            jobs.append(Job(team=team, submitted_by=admin, name=f"wait-{tag}-{k}", image="pytorch:2", instance_type=it,
                            pods=rng.choice((1, 1, 2, 3, 4, 8)), memory_gib=rng.choice((16, 64)),
                            priority_class_id=classes["urgent"] if urgent else rng.choice((None, classes["training"])),
                            expected_duration_s=3600, **unit(it, half=rng.random() < 0.3)))  # fmt: skip
        return jobs

    counter = SearchCounter()
    counter.take(scheduler)
    submit(assorted(1_200, "first"))
    result = None

    def first():
        nonlocal result
        result = scheduler.run_pass(trigger="bench")

    c0, t0 = time.process_time(), time.perf_counter()
    if not within_budget(first, args.full_budget):
        # a pass that does not end within the budget is the figure: it is rolled back and the phase stops here
        figures["full cluster: first pass, 1,200 arrive"] = {
            "median_s": round(time.perf_counter() - t0, 1), "finished": False, "cpu_budget_s": args.full_budget,
            "cpu_s": round(time.process_time() - c0, 1),
            "wall_s": round(time.perf_counter() - t0, 1), "free_nodes_before": free_nodes, "below_quota": len(under),
            **counter.take(scheduler),
        }  # fmt: skip
        return
    figures["full cluster: first pass, 1,200 arrive"] = {
        "median_s": round(time.perf_counter() - t0, 3),
        "cpu_s": round(time.process_time() - c0, 3),
        "finished": True,
    }
    figures["full cluster: first pass, 1,200 arrive"].update(
        admitted=result.admitted,
        preempted=result.preempted,
        pending=result.pending,
        cut=result.cut,  # the settle reached the scheduler's SETTLE_BUDGET_S: more passes follow at once
        free_nodes_before=free_nodes,
        below_quota=len(under),
        **counter.take(scheduler),
    )
    # A cut pass leaves work for the next: the passes that follow at once until one settles are the real cost
    # of the arrivals (within the same CPU budget).
    passes, admitted, preempted = 1, result.admitted, result.preempted
    c1 = time.process_time()
    while result.cut and time.process_time() - c0 < args.full_budget:
        result = scheduler.run_pass(trigger="bench")
        passes, admitted, preempted = passes + 1, admitted + result.admitted, preempted + result.preempted
    figures["full cluster: passes until settled"] = {
        "median_s": round(time.perf_counter() - t0, 3), "median_cpu_s": round(time.process_time() - c0, 3),
        "settled": not result.cut, "passes": passes, "admitted": admitted, "preempted": preempted,
        "pending": result.pending, "cpu_after_first_s": round(time.process_time() - c1, 3), **counter.take(scheduler),
    }  # fmt: skip
    runs, cpu, searches = [], [], []
    for k in range(max(1, args.repeat)):
        done = list(Job.objects.filter(state__in=(JobState.RUNNING, JobState.ADMITTED)).order_by("?")[:5])
        Job.objects.filter(pk__in=[j.pk for j in done]).update(state=JobState.SUCCEEDED)
        JobEvent.objects.bulk_create(JobEvent(job=j, to_state=JobState.SUCCEEDED, reason="bench") for j in done)
        submit(assorted(50, f"steady{k}"))
        c0, t0 = time.process_time(), time.perf_counter()
        if args.profile and k == 0:
            result = profiled(lambda: scheduler.run_pass(trigger="bench"), "full cluster: steady pass")
        else:
            result = scheduler.run_pass(trigger="bench")
        cpu.append(time.process_time() - c0)
        runs.append(time.perf_counter() - t0)
        searches.append(counter.take(scheduler))
    figures["full cluster: steady pass"] = {
        "median_s": round(statistics.median(runs), 3), "max_s": round(max(runs), 3), "runs": len(runs),
        "median_cpu_s": round(statistics.median(cpu), 3), "max_cpu_s": round(max(cpu), 3),
        "admitted": result.admitted, "preempted": result.preempted, "pending": result.pending, "cut": result.cut,
        "searches": searches,
    }  # fmt: skip
    if args.dump:  # the engine's state as the steady passes left it, for engine-only experiments (pickle)
        import pickle

        sys.setrecursionlimit(100_000)
        with open(args.dump, "wb") as handle:
            pickle.dump(scheduler.state.scheduler, handle)
    # The state read whole, three ways (the collection of the state each replaces follows it, between passes, as
    # the scheduler process does it when idle):
    #   - the consistency check once a minute: read afresh, compared with the warm state, swapped in;
    #   - after a failed pass: read afresh (the pace of publications and reasons goes on);
    #   - a scheduler starting (or taking over): also publishes the plan for the pages at once.
    from scheduling.warm import CHECK_SECONDS, WarmScheduler

    def check():
        nonlocal result
        scheduler.check_seconds = 0.0
        try:
            result = scheduler.run_pass(trigger="bench")
        finally:
            scheduler.check_seconds = CHECK_SECONDS

    def measure(label: str, fn, owner) -> None:
        with PassParts() as parts:
            figures[label] = timed(fn, 1)
        figures[label].update(
            admitted=result.admitted, preempted=result.preempted, pending=result.pending, drift=result.drift,
            **parts.figures(), **counter.take(owner),
        )  # fmt: skip

    scheduler.collect_garbage()
    measure("full cluster: consistency check", check, scheduler)
    scheduler.collect_garbage()
    scheduler.drop("bench: the whole state read afresh")
    if args.profile:
        profiled(first, "full cluster: state read whole")
        scheduler.drop("bench: the whole state read afresh")
        scheduler.collect_garbage()
    measure("full cluster: state read whole", first, scheduler)
    # the state that pass replaced, collected as the scheduler process does it: between passes, when idle
    collected = scheduler.collect_garbage()
    figures["full cluster: replaced state collected"] = {
        "median_s": round(collected or 0.0, 3), "median_cpu_s": round(collected or 0.0, 3), "runs": 1,
        "between_passes": True,
    }  # fmt: skip
    starting = WarmScheduler(carry_out=lambda: None, freeze_state=True)

    def start():
        nonlocal result
        result = starting.run_pass(trigger="bench")

    scheduler.drop("bench: replaced by a scheduler starting")
    measure("full cluster: a scheduler starting", start, starting)
    starting.collect_garbage()


def profiled(fn, label: str):
    """Run fn under cProfile and print where it spent its time (top 25 by cumulative time)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    result = profiler.runcall(fn)
    print(f"--- profile: {label}")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return result


class OverBudget(Exception):
    pass


def within_budget(fn, cpu_seconds: float) -> bool:
    """Run fn; False if it used more than `cpu_seconds` of this process's CPU (it is interrupted there)."""
    import signal

    def alarm(*_):
        raise OverBudget

    previous = signal.signal(signal.SIGPROF, alarm)
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    try:
        fn()
        return True
    except OverBudget:
        return False
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


class PassParts:
    """A scheduler pass in its parts: the admission run as it records itself (AdmissionRun.duration_ms: reading,
    deciding, explaining and writing, in its transaction, what the admission-runs page shows) and the publication
    of the plan for the pages that follows the commit (published.after_pass, CPU seconds)."""

    def __enter__(self):
        from scheduling import published
        from scheduling.models import AdmissionRun

        self.module, self.original, self.cpu = published, published.after_pass, 0.0
        self.top = AdmissionRun.objects.order_by("-pk").values_list("pk", flat=True).first() or 0

        def after_pass(*a, **k):
            c0 = time.process_time()
            try:
                return self.original(*a, **k)
            finally:
                self.cpu += time.process_time() - c0

        published.after_pass = after_pass
        return self

    def __exit__(self, *exc):
        self.module.after_pass = self.original

    def figures(self) -> dict:
        from scheduling.models import AdmissionRun

        runs = list(AdmissionRun.objects.filter(pk__gt=self.top).values_list("duration_ms", flat=True))
        return {"recorded_run_s": round(max(runs) / 1000, 3) if runs else None, "publication_cpu_s": round(self.cpu, 3)}


def timed(fn, repeat: int) -> dict:
    runs, cpu = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        runs.append(time.perf_counter() - t0)
    return {"median_s": round(statistics.median(runs), 3), "max_s": round(max(runs), 3), "runs": len(runs),
            "median_cpu_s": round(statistics.median(cpu), 3)}  # fmt: skip


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--teams", type=int, default=TEAMS)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-full", action="store_true", help="skip the full-cluster phase")
    parser.add_argument(
        "--full-budget", type=float, default=120.0,
        help="CPU seconds the full cluster's first pass may take before it is stopped and reported unfinished",
    )  # fmt: skip
    parser.add_argument("--no-pages", action="store_true", help="skip timing the pages")
    parser.add_argument("--dump", help="pickle the engine's state after the full cluster's steady passes here")
    parser.add_argument("--db", default=DB_NAME, help="database name (dropped and recreated)")
    args = parser.parse_args()

    recreate_database()
    import django

    django.setup()
    from django.test import Client

    from scheduling.loop import admission_run
    from scheduling.models import Job, JobState

    t0 = time.perf_counter()
    admin, teams = build(args.teams)
    print(f"built 20,000 nodes, {len(teams)} teams, {Job.objects.count()} jobs in {time.perf_counter() - t0:.1f} s")
    figures = {}

    def report(label):
        f = figures[label]
        extra = {k: v for k, v in f.items() if k not in ("median_s", "max_s", "runs", "median_cpu_s")}
        cpu = f" {f['median_cpu_s']:8.3f} CPU-s" if "median_cpu_s" in f else ""
        print(f"{label:<40} {f['median_s']:8.3f} s{cpu}  {extra or ''}", flush=True)

    t0 = time.perf_counter()
    run = admission_run(trigger="bench")
    # the run as it records itself (deciding and writing, in one transaction), and with the starts on the cluster
    # that follow it (3,000 jobs at once here; the scheduler process leaves those to its carrier thread)
    figures["admission run, cold"] = {"median_s": round(run.duration_ms / 1000, 3), "runs": 1,
                                      "with_starts_s": round(time.perf_counter() - t0, 3),
                                      "admitted": run.admitted, "pending": run.pending}  # fmt: skip
    report("admission run, cold")
    more = [
        Job(team=j.team, submitted_by=admin, name=f"{j.name}-again", image="pytorch:2", instance_type=j.instance_type,
            pods=j.pods, accelerators=j.accelerators, vcpus=j.vcpus, memory_gib=j.memory_gib, expected_duration_s=3600)
        for j in Job.objects.filter(name__endswith="-0").select_related("team", "instance_type")
    ]  # fmt: skip
    Job.objects.bulk_create(more)

    def steady():
        admission_run(trigger="bench")

    if args.profile:
        profiled(steady, "admission run, steady")
    figures["admission run, steady"] = timed(steady, args.repeat)
    figures["admission run, steady"]["running"] = Job.objects.filter(state=JobState.RUNNING).count()
    figures["admission run, steady"]["pending"] = Job.objects.filter(state=JobState.PENDING).count()
    report("admission run, steady")

    scheduler = warm_figures(figures, admin, args)
    report("scheduler pass, state read whole")
    report("scheduler pass, 1,000 new jobs")
    if not args.no_full:
        full_figures(figures, admin, args, scheduler)
        for name in (
            "full cluster: first pass, 1,200 arrive",
            "full cluster: passes until settled",
            "full cluster: steady pass",
            "full cluster: consistency check",
            "full cluster: state read whole",
            "full cluster: replaced state collected",
            "full cluster: a scheduler starting",
        ):
            if name in figures:
                report(name)
        if not figures["full cluster: first pass, 1,200 arrive"]["finished"]:
            scheduler.drop("bench: the full-cluster pass was stopped")

    client = Client()
    client.force_login(admin)
    # The first request of a process imports every view module through the URLconf (about 1 s here, the Kubernetes
    # client alone 0.4 s): a cost of starting a web process, not of the page that happens to come first.
    from django.urls import get_resolver

    assert get_resolver().url_patterns
    team = teams[len(teams) // 2]
    for label, url in (
        ()
        if args.no_pages
        else (
            ("team list /teams/", "/teams/"),
            ("team page /teams/<id>/", f"/teams/{team.pk}/"),
            ("team status API", f"/api/teams/{team.pk}/status/"),
        )
    ):
        response = None

        def get(url=url):
            nonlocal response
            response = client.get(url)

        figures[label] = timed(get, args.repeat)
        assert response.status_code == 200, url
        report(label)
    out = os.path.join(ROOT, "bench", "results")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"bounds-{datetime.now(UTC):%Y%m%d-%H%M%S}.json")
    with open(path, "w") as handle:
        json.dump({"nodes": 20_000, "teams": args.teams, "figures": figures}, handle, indent=2)
    print("goal: each under 1 s")
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
