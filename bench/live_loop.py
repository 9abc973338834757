#!/usr/bin/env python3
"""The live admission loop under Kueue's scheduler-performance scenarios, in real time, beside the engine.

The real path: jobs are created through scheduling.services.job_submit (as the API and the form do), each
submit wakes the scheduler process (`manage.py scheduler`, the warm engine) through Redis, which admits
against PostgreSQL; Celery workers run the simulated cluster (starts, finishes) and beat its periodic
tasks. Nothing is shortened except by --fraction.

Scenarios (../shared/bench/kueue_perf.py): baseline (30 cluster queues in 5 cohorts, 15,000 workloads) and
large (1,000 queues in 10 cohorts, 50,000 workloads). Each queue is a team with a 20-vCPU allocation on one
instance type, borrow_limit_pct = 500 (Kueue's borrowing limit of 100), preempt_team_tasks LowerPriority,
policy task-ranking + fcfs. Runtimes are expected durations in whole seconds x SIMULATED_TIME_SCALE.

The same scenario also runs through the engine's simulator in this process (scheduling.engine), so the
live figures are printed beside the engine's and Kueue's published ones. Waits are creation to first
admission, as the engine's benchmark counts them. CPU seconds are read from /proc for every process of the
control plane: the scheduler, the Celery workers (with their pool children), beat, the submitting clients
(the threads that stand in for the web tier) and the PostgreSQL backends serving this database.

Afterwards, with the cluster idle, it submits single jobs one at a time and measures submit-to-admission
latency when quota is free (p50 / p95, server clock).

Prints; never asserts. Usage: .venv/bin/python bench/live_loop.py [--scenario baseline|large] [--fraction 0.1]
Database and Redis: BENCH_DATABASE_URL / BENCH_REDIS_URL, else DATABASE_URL / REDIS_URL.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SCENARIOS = {  # our name -> (kueue_perf name, SIMULATED_TIME_SCALE, Kueue's published figures)
    "baseline": (
        "baseline",
        0.1,
        {"wall_s": 351.1, "usage_pct": 55.9, "cpu_s": 140.0, "large": 16.5, "medium": 76.8, "small": 215.5},
    ),
    "large": (
        "large-scale",
        0.05,
        {"wall_s": 1179.4, "usage_pct": 31.6, "cpu_s": None, "large": 105.6, "medium": 256.4, "small": 700.4},
    ),
}
BORROW_PCT = 500  # Kueue's borrowing limit of 100 CPUs on a 20-CPU nominal quota
CLASSES = ("large", "medium", "small")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", choices=sorted(SCENARIOS), default="baseline")
    p.add_argument("--fraction", type=float, default=1.0, help="share of each team's workloads of each class")
    p.add_argument("--workers", type=int, default=2, help="Celery worker processes (the simulated cluster)")
    p.add_argument(
        "--db",
        default=os.environ.get("BENCH_DATABASE_URL")
        or os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/portal_bench"),
    )
    p.add_argument(
        "--redis", default=os.environ.get("BENCH_REDIS_URL") or os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/12")
    )
    p.add_argument("--clients", type=int, default=4, help="submitting threads, each with its own connection")
    p.add_argument("--latency-samples", type=int, default=60)
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--profile-scheduler", action="store_true", help="CPU profile of the scheduler: var/scheduler.prof")
    p.add_argument("--profile-worker", action="store_true", help="CPU profile of worker0 (solo pool): var/worker.prof")
    return p.parse_args()


def environment(args, time_scale: float) -> dict:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DATABASE_URL=args.db,
        REDIS_URL=args.redis,
        SECRET_KEY=env.get("SECRET_KEY", "bench-only-secret-key-" + "x" * 40),
        DEBUG="false",
        CELERY_TASK_ALWAYS_EAGER="false",
        ADMISSION_SCHEDULER="process",
        SIMULATED_TIME_SCALE=str(time_scale),
        SIMULATED_FAILURE_RATE="0",
        DEMO_TRAFFIC="false",
        CLUSTER_BACKEND="simulated",
        LOG_LEVEL="WARNING",
        CONN_MAX_AGE="600",
    )
    return env


# --- the scenario -----------------------------------------------------------------------------------------


def scenario_for(args) -> dict:
    from engine import kueue_scenario, subset_kueue  # bench/engine.py: the engine benchmark's own loader

    return subset_kueue(kueue_scenario(SCENARIOS[args.scenario][0]), args.fraction)


def engine_figures(scenario: dict) -> dict:
    """The same scenario through the engine's simulator, in this process."""
    from engine import kueue_figures, run

    out, cpu = run(scenario)
    fig = kueue_figures(scenario, out)
    return {"cpu_s": cpu, "usage_pct": fig["usage_pct"], "waits_s": fig["wait"], "preemptions": fig["preemptions"]}


def engine_on_actual_arrivals(scenario: dict, time_scale: float) -> dict:
    """The engine on the arrivals as they happened: the submitting clients may lag the scenario, which spreads
    the arrivals and shortens the queues. The live loop's waits and usage compare fairly with these."""
    from scheduling.models import Job

    priority = {w["name"].split("-")[-2]: w["priority"] for w in scenario["workloads"]}
    rows = (
        Job.objects.exclude(name="probe")
        .order_by("submitted_at", "pk")
        .values_list("pk", "team__name", "priority_class__name", "vcpus", "expected_duration_s", "submitted_at")
    )
    first = rows[0][5]
    workloads = []
    for pk, team, priority_class, vcpus, expected, submitted in rows:
        cls = priority_class.removeprefix("bench-")
        workloads.append(
            {"name": f"{team}-{cls}-{pk}", "team": team, "priority": priority[cls], "requests": {"cpu": vcpus},
             "submit": round((submitted - first).total_seconds(), 3), "duration": expected * time_scale}
        )  # fmt: skip
    return engine_figures({**scenario, "workloads": workloads})


def create_database(url: str) -> None:
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_world(scenario: dict, time_scale: float):
    """Teams, allocations, priority classes and policy of the scenario; an empty jobs table; the schedule."""
    from django.core.management import call_command
    from django.db import connection, transaction

    from quotas.models import ClusterPolicy, ComputeAllocation, InstanceType, NodeGroup, PriorityClass, Role, Team, User

    call_command("migrate", verbosity=0, interactive=False)
    with connection.cursor() as c:
        c.execute("TRUNCATE scheduling_jobevent, scheduling_job, scheduling_admissionrun RESTART IDENTITY CASCADE")
    nominal = {t["name"]: t["quota"]["rf"]["cpu"] for t in scenario["teams"]}
    total_cpu = sum(nominal.values())
    with transaction.atomic():
        Team.objects.filter(name__startswith="cq-").exclude(name__in=list(nominal)).delete()
        it, _ = InstanceType.objects.update_or_create(
            name="bench.cpu", defaults=dict(family="bench", vcpus=total_cpu, memory_gib=total_cpu * 8, accelerators=0)
        )
        NodeGroup.objects.update_or_create(name="bench-nodes", defaults=dict(instance_type=it, node_count=1))
        policy = ClusterPolicy.load()
        policy.task_prioritization, policy.idle_compute = "task-ranking", "fcfs"
        policy.save()
        priorities = {w["name"].split("-")[-2]: w["priority"] for w in scenario["workloads"]}
        for cls, weight in priorities.items():
            PriorityClass.objects.update_or_create(name=f"bench-{cls}", defaults=dict(weight=weight))
        user, _ = User.objects.update_or_create(username="bench", defaults=dict(role=Role.ADMIN, is_superuser=True))
        for t in scenario["teams"]:
            team, _ = Team.objects.update_or_create(
                name=t["name"],
                defaults=dict(
                    namespace=f"bench-{t['name']}",
                    cohort=t["cohort"],
                    sharing="LendAndBorrow",
                    borrow_limit_pct=BORROW_PCT,
                    preempt_team_tasks="LowerPriority",
                    fair_share_weight=1.0,
                ),
            )
            ComputeAllocation.objects.update_or_create(
                team=team, instance_type=it, defaults=dict(instances=None, accelerators=None, vcpus=nominal[t["name"]])
            )
    schedule = sorted(
        (w["submit"], w["team"], w["name"].split("-")[-2], w["requests"]["cpu"], round(w["duration"] / time_scale))
        for w in scenario["workloads"]
    )
    return user, schedule, total_cpu


# --- processes and their CPU ------------------------------------------------------------------------------


def start_processes(env, workers: int, profile_scheduler: bool = False, profile_worker: bool = False):
    venv = ROOT / ".venv" / "bin"
    profiler = str(ROOT / "bench" / "cpu_profile.py")  # cProfile counting CPU time, not wall time
    profile = [profiler, str(ROOT / "var" / "scheduler.prof")] if profile_scheduler else []
    logs = ROOT / "var" / "log"
    logs.mkdir(parents=True, exist_ok=True)
    commands = {
        "scheduler": [str(venv / "python"), *profile, "manage.py", "scheduler"],
        "beat": [str(venv / "celery"), "-A", "portal", "beat", "-l", "WARNING", "-s",
                 str(ROOT / "var" / "bench-beat-schedule")],
    }  # fmt: skip
    for i in range(workers):
        commands[f"worker{i}"] = [
            str(venv / "celery"), "-A", "portal", "worker", "-l", "WARNING", "-c", "1", "-n", f"bench{i}@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ]  # fmt: skip
    if profile_worker:  # worker0 in one process (solo pool) under cProfile
        prof = [profiler, str(ROOT / "var" / "worker.prof"), "-m", "celery"]
        commands["worker0"] = [str(venv / "python"), *prof, *commands["worker0"][1:], "--pool", "solo"]
    return {
        name: subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=(logs / f"bench-{name}.log").open("w"),  # noqa: SIM115 - lives as long as the process
            stderr=subprocess.STDOUT,
        )
        for name, argv in commands.items()
    }


def wait_until_started(procs: dict[str, subprocess.Popen], idle_cpu_s: float = 0.1, timeout: float = 90) -> dict:
    """Wait until every process has started (at least 5 s, then until none spent more than `idle_cpu_s` of CPU
    in the last second: on a busy machine start-up takes longer than 5 s); returns their CPU seconds then."""
    time.sleep(5)
    before = {name: tree_cpu(p.pid) for name, p in procs.items()}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(1)
        now = {name: tree_cpu(p.pid) for name, p in procs.items()}
        if all(now[name] - before[name] <= idle_cpu_s for name in procs):
            return now
        before = now
    print("  (processes still busy after start-up; measuring from now)", flush=True)
    return before


def stop_processes(procs: dict[str, subprocess.Popen]) -> None:
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs.values():
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process plus its reaped children) from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return int(fields[1]), (utime + stime + cutime + cstime) / CLK_TCK


def tree_cpu(root: int) -> float:
    """CPU seconds of a process and all its live descendants (a Celery worker's pool children)."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            got = _stat(int(entry.name))
            if got:
                stats[int(entry.name)] = got
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
            todo.extend(child for child, (parent, _) in stats.items() if parent == pid)
    return total


class PostgresWatch:
    """CPU seconds of the PostgreSQL backends serving the bench database (sampled from /proc every 0.5 s,
    so a backend that lives less than that is missed: the session count says how many there were), plus
    the database's session, commit and rollback counters."""

    def __init__(self, url: str):
        import psycopg

        self.name = url.rsplit("/", 1)[1]
        self.conn = psycopg.connect(url, autocommit=True)
        self.me = self.conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        self.cpu: dict[int, float] = {}
        self.base: dict[int, float] = {}
        self.stopping = threading.Event()
        self.counters0 = self.counters()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def counters(self) -> dict:
        row = self.conn.execute(
            "SELECT sessions, xact_commit, xact_rollback FROM pg_stat_database WHERE datname = %s", [self.name]
        ).fetchone()
        return {"sessions": row[0], "commits": row[1], "rollbacks": row[2]}

    def _sample(self) -> None:
        pids = [
            r[0]
            for r in self.conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> %s", [self.name, self.me]
            )
        ]
        for pid in pids:
            got = _stat(pid)
            if got:
                self.base.setdefault(pid, got[1])  # CPU it had spent before the run started
                self.cpu[pid] = got[1]

    def _run(self) -> None:
        while not self.stopping.wait(0.5):
            self._sample()

    def start(self) -> None:
        self._sample()
        self.base = dict(self.cpu)

    def stop(self) -> dict:
        self.stopping.set()
        self.thread.join()
        self._sample()
        counters = self.counters()
        self.conn.close()
        return {
            "backend_cpu_s": sum(cpu - self.base.get(pid, 0.0) for pid, cpu in self.cpu.items()),
            **{k: counters[k] - self.counters0[k] for k in counters},
        }


# --- the run ----------------------------------------------------------------------------------------------


def submit_in_real_time(user, schedule, clients: int) -> tuple[float, float, float]:
    """Each client (a thread with its own database connection) submits its share of workloads on time.
    Returns wall seconds, the worst lag behind the schedule, and the clients' CPU seconds."""
    from django.db import connection

    from scheduling.services import JobRequest, job_submit

    t0 = time.perf_counter()
    lags, cpu = [0.0] * clients, [0.0] * clients

    def client(k):
        try:
            for offset, team, cls, vcpus, duration in schedule[k::clients]:
                delay = offset - (time.perf_counter() - t0)
                if delay > 0:
                    time.sleep(delay)
                lags[k] = max(lags[k], -delay)
                job_submit(
                    user=user,
                    request=JobRequest(team=team, name=f"{cls}-{team}", image="bench", vcpus=vcpus, pods=1,
                                       priority_class=f"bench-{cls}", expected_duration_s=duration),
                )  # fmt: skip
        finally:
            cpu[k] = time.thread_time()
            connection.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, max(lags), sum(cpu)


def wait_until_done(timeout: float) -> bool:
    from scheduling.models import FINAL_STATES, Job

    deadline = time.time() + timeout
    last = 0.0
    while time.time() < deadline:
        left = Job.objects.exclude(state__in=FINAL_STATES).count()
        if left == 0:
            return True
        if time.time() - last > 15:
            print(f"  ... {left} jobs not finished yet", flush=True)
            last = time.time()
        time.sleep(0.5)
    return False


def live_figures(total_cpu: float) -> dict:
    """Usage and waits from the job events, counted as the engine benchmark counts them."""
    from scheduling.models import Job, JobEvent

    jobs = {
        pk: (vcpus, cls.removeprefix("bench-"), submitted)
        for pk, vcpus, cls, submitted in Job.objects.values_list("pk", "vcpus", "priority_class__name", "submitted_at")
    }
    events = list(JobEvent.objects.order_by("at", "id").values_list("job_id", "at", "to_state"))
    first = min([e[1] for e in events] + [j[2] for j in jobs.values()])
    last = max(e[1] for e in events)
    used, open_at, first_admit = 0.0, {}, {}
    for job_id, at, state in events:
        if state == "admitted":
            open_at[job_id] = at
            first_admit.setdefault(job_id, at)
        elif job_id in open_at and state in ("preempted", "succeeded", "failed", "cancelled"):
            used += jobs[job_id][0] * (at - open_at.pop(job_id)).total_seconds()
    waits = defaultdict(list)
    for pk, (_, cls, submitted) in jobs.items():
        if pk in first_admit:
            waits[cls].append((first_admit[pk] - submitted).total_seconds())
    wall = (last - first).total_seconds()
    return {
        "wall_s": wall,
        "usage_pct": used * 100 / (total_cpu * wall) if wall else 0.0,
        "waits_s": {cls: statistics.fmean(v) for cls, v in waits.items()},
        "workloads": len(jobs),
        "preemptions": sum(1 for e in events if e[2] == "preempted"),
    }


def free_quota_latency(user, samples: int, teams: list[str]) -> dict:
    """One job at a time on an idle cluster: seconds from submit to admitted (server clock), p50 and p95."""
    from scheduling.models import Job, JobState
    from scheduling.services import JobRequest, job_submit

    server, seen = [], []
    for i in range(samples):
        t0 = time.perf_counter()
        job = job_submit(
            user=user,
            request=JobRequest(team=teams[i % len(teams)], name="probe", image="bench", vcpus=1,
                               priority_class="bench-small", expected_duration_s=2),
        )  # fmt: skip
        admitted_at = None
        while time.perf_counter() - t0 < 10:
            state, admitted_at = Job.objects.filter(pk=job.pk).values_list("state", "admitted_at").get()
            if state != JobState.PENDING:
                break
            time.sleep(0.005)
        seen.append(time.perf_counter() - t0)
        if admitted_at is not None:
            server.append((admitted_at - job.submitted_at).total_seconds())
        time.sleep(0.3)
    pct = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")  # noqa: E731
    return {"p50_s": pct(server, 0.5), "p95_s": pct(server, 0.95), "seen_p50_s": pct(seen, 0.5),
            "seen_p95_s": pct(seen, 0.95), "admitted": len(server), "samples": samples}  # fmt: skip


def main():
    args = parse_args()
    if not (SHARED / "bench" / "kueue_perf.py").exists():
        sys.exit(f"{SHARED}/bench/kueue_perf.py is missing: it defines the scenarios")
    _, time_scale, kueue = SCENARIOS[args.scenario]
    env = environment(args, time_scale)
    os.environ.update(env)
    create_database(args.db)
    import django

    django.setup()
    import redis

    from portal.celery import app

    scenario = scenario_for(args)
    print(f"engine: simulating the same {len(scenario['workloads'])} workloads in-process ...", flush=True)
    engine = engine_figures(scenario)
    user, schedule, total_cpu = setup_world(scenario, time_scale)
    r = redis.Redis.from_url(args.redis)
    for key in r.scan_iter("portal:*"):
        r.delete(key)
    app.control.purge()
    print(
        f"live loop bench: Kueue {args.scenario} x {args.fraction:g} = {len(schedule)} workloads, "
        f"{len(scenario['teams'])} teams, scheduler + {args.workers} worker(s) + beat, {args.clients} clients",
        flush=True,
    )
    procs = start_processes(env, args.workers, args.profile_scheduler, args.profile_worker)
    try:
        cpu0 = wait_until_started(procs)  # start-up (imports, checks) is not work for the workloads
        pg = PostgresWatch(args.db)
        pg.start()
        submit_s, lag, client_cpu = submit_in_real_time(user, schedule, args.clients)
        print(f"  submitted in {submit_s:.1f} s (scenario span {schedule[-1][0]:.1f} s; worst lag {lag:.2f} s)")
        done = wait_until_done(args.timeout)
        cpu = {name: tree_cpu(p.pid) - cpu0[name] for name, p in procs.items()}
        postgres = pg.stop()
        live = live_figures(total_cpu)
        actual = engine_on_actual_arrivals(scenario, time_scale)
        latency = free_quota_latency(user, args.latency_samples, [t["name"] for t in scenario["teams"]][:10])
    finally:
        stop_processes(procs)
    from scheduling.models import AdmissionRun

    runs = list(AdmissionRun.objects.values_list("duration_ms", flat=True))
    cpu["submit clients (web)"] = client_cpu
    cpu["postgresql backends"] = postgres["backend_cpu_s"]
    control_plane = sum(cpu.values())
    report(args, live, engine, kueue, cpu, control_plane, postgres, latency, runs, done, submit_s, lag, actual)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    path = out / f"live_loop-{datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(
        json.dumps(
            {
                "args": vars(args),
                "workloads": live["workloads"],
                "finished": done,
                "wall_s": live["wall_s"],
                "control_plane_cpu_s": control_plane,
                "cpu_s_by_process": cpu,
                "postgresql": postgres,
                "usage_pct": live["usage_pct"],
                "engine_usage_pct": engine["usage_pct"],
                "waits_s": {c: live["waits_s"].get(c) for c in CLASSES},
                "engine_waits_s": {c: engine["waits_s"].get(c) for c in CLASSES},
                "engine_cpu_s": engine["cpu_s"],
                "engine_actual_arrivals": {
                    "usage_pct": actual["usage_pct"],
                    "waits_s": {c: actual["waits_s"].get(c) for c in CLASSES},
                },
                "submit_to_admission_p50_s": latency["p50_s"],
                "submit_to_admission_p95_s": latency["p95_s"],
                "latency": latency,
                "preemptions": live["preemptions"],
                "engine_preemptions": engine["preemptions"],
                "admission_runs": len(runs),
                "submit_wall_s": submit_s,
                "submit_worst_lag_s": lag,
                "kueue": kueue,
            },
            indent=2,
        )
    )
    print(f"figures written to {path.relative_to(ROOT)}")


def report(args, live, engine, kueue, cpu, control_plane, postgres, latency, runs, done, submit_s, lag, actual) -> None:
    def cell(x, fmt=".1f"):
        return f"{x:>12{fmt}}" if isinstance(x, (int, float)) else f"{'—':>12}"

    print()
    print(f"{'':36}{'portal':>12}{'engine':>12}{'Kueue':>12}{'engine, arrivals as submitted':>31}")
    print(f"{'wall time (s)':36}{cell(live['wall_s'])}{cell(None)}{cell(kueue['wall_s'])}")
    print(
        f"{'usage (% of nominal CPU)':36}{cell(live['usage_pct'])}{cell(engine['usage_pct'])}{cell(kueue['usage_pct'])}"
        f"{cell(actual['usage_pct'])}"
    )
    for cls in CLASSES:
        label = f"avg creation->admission {cls} (s)"
        print(f"{label:36}{cell(live['waits_s'].get(cls), '.2f')}{cell(engine['waits_s'].get(cls), '.2f')}"
              f"{cell(kueue[cls])}{cell(actual['waits_s'].get(cls), '.2f')}")  # fmt: skip
    print(f"{'preemptions':36}{cell(live['preemptions'], 'd')}{cell(engine['preemptions'], 'd')}{cell(None)}")
    print(f"{'control plane CPU (s)':36}{cell(control_plane)}{cell(engine['cpu_s'], '.2f')}{cell(kueue['cpu_s'])}")
    for name, seconds in cpu.items():
        print(f"{'  ' + name:36}{cell(seconds, '.2f')}")
    print(
        f"{'PostgreSQL sessions / commits / rollbacks':44}{postgres['sessions']} / {postgres['commits']} /"
        f" {postgres['rollbacks']}"
    )
    if runs:
        print(f"{'recorded scheduler passes / p50 / max (ms)':44}{len(runs)} / {statistics.median(runs):.0f} / "
              f"{max(runs):.0f}")  # fmt: skip
    print(f"{'submitting took (s) / worst lag (s)':44}{submit_s:.1f} / {lag:.2f}")
    for q in ("p50", "p95"):
        print(
            f"{'free quota: submit->admitted ' + q:36}{latency[q + '_s'] * 1000:>9.0f} ms"
            f"  (seen by a poller {latency['seen_' + q + '_s'] * 1000:.0f} ms)"
        )
    if not done:
        print("NOTE: not every job finished before the timeout; figures cover what ran")


if __name__ == "__main__":
    main()
