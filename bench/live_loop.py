#!/usr/bin/env python3
"""The live admission loop under Kueue's baseline scheduler-performance scenario, in real time.

The real path: jobs are created through scheduling.services.job_submit (as the API and the form do), each
submit asks for an admission run through Celery (Redis broker), Celery worker processes run the loop against
PostgreSQL, and the simulated cluster starts and finishes the jobs. Nothing is shortened except by --fraction.

Kueue's scenario (../shared/bench/kueue_perf.py baseline): 30 cluster queues in 5 cohorts, each 20 CPU
nominal with a borrowing limit of 100 CPU; per queue 350 small (1 CPU, every 0.1 s, runs 0.2 s, priority
50), 100 medium (5 CPU, every 0.5 s, 0.5 s, 100) and 50 large (20 CPU, every 1.2 s, 1 s, 200) workloads.
Here: teams with a 20-vCPU allocation on one instance type and borrow_limit_pct = 500 (= 100 vCPUs; the
Team model has no absolute borrowing limit), preempt_team_tasks LowerPriority, policy task-ranking + fcfs.
Runtimes are given as expected durations 2 / 5 / 10 s with SIMULATED_TIME_SCALE = 0.1 (the field is whole
seconds), so they run 0.2 / 0.5 / 1.0 s.

Afterwards, with the cluster idle, it submits single jobs one at a time and measures submit-to-admission
latency when quota is free (p50 / p95).

Prints; never asserts. Usage: .venv/bin/python bench/live_loop.py [--fraction 0.1] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
KUEUE = {"wall_s": 351.1, "usage_pct": 55.9, "large": 16.5, "medium": 76.8, "small": 215.5}
COHORTS, PER_COHORT, NOMINAL_CPU, BORROW_PCT = 5, 6, 20, 500
CLASSES = [  # class, count per team, cpu, every s, runtime s (as expected duration x 0.1), priority
    ("small", 350, 1, 0.1, 2, 50),
    ("medium", 100, 5, 0.5, 5, 100),
    ("large", 50, 20, 1.2, 10, 200),
]
TIME_SCALE = 0.1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fraction", type=float, default=1.0, help="share of each class's workloads to run")
    p.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    p.add_argument(
        "--db", default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/portal_bench")
    )
    p.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/12"))
    p.add_argument("--clients", type=int, default=4, help="submitting threads, each with its own connection")
    p.add_argument("--latency-samples", type=int, default=60)
    p.add_argument("--timeout", type=float, default=1800)
    return p.parse_args()


def environment(args) -> dict:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DATABASE_URL=args.db,
        REDIS_URL=args.redis,
        SECRET_KEY=env.get("SECRET_KEY", "bench-only-secret-key-" + "x" * 40),
        DEBUG="false",
        CELERY_TASK_ALWAYS_EAGER="false",
        SIMULATED_TIME_SCALE=str(TIME_SCALE),
        SIMULATED_FAILURE_RATE="0",
        DEMO_TRAFFIC="false",
        CLUSTER_BACKEND="simulated",
        LOG_LEVEL="WARNING",
        CONN_MAX_AGE="600",
    )
    return env


def create_database(url: str) -> None:
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_world(fraction: float):
    """Teams, allocations, priority classes and policy of the scenario; an empty jobs table."""
    from django.core.management import call_command
    from django.db import connection

    from quotas.models import ClusterPolicy, ComputeAllocation, InstanceType, NodeGroup, PriorityClass, Role, Team, User

    call_command("migrate", verbosity=0, interactive=False)
    with connection.cursor() as c:
        c.execute("TRUNCATE scheduling_jobevent, scheduling_job, scheduling_admissionrun RESTART IDENTITY CASCADE")
    total_cpu = COHORTS * PER_COHORT * NOMINAL_CPU
    it, _ = InstanceType.objects.update_or_create(
        name="bench.cpu", defaults=dict(family="bench", vcpus=total_cpu, memory_gib=total_cpu * 8, accelerators=0)
    )
    NodeGroup.objects.update_or_create(name="bench-nodes", defaults=dict(instance_type=it, node_count=1))
    policy = ClusterPolicy.load()
    policy.task_prioritization, policy.idle_compute = "task-ranking", "fcfs"
    policy.save()
    classes = {}
    for cls, _, _, _, _, prio in CLASSES:
        classes[cls], _ = PriorityClass.objects.update_or_create(name=f"bench-{cls}", defaults=dict(weight=prio))
    user, _ = User.objects.update_or_create(username="bench", defaults=dict(role=Role.ADMIN, is_superuser=True))
    teams = []
    for c in range(COHORTS):
        for q in range(PER_COHORT):
            team, _ = Team.objects.update_or_create(
                name=f"cq-{c}-{q}",
                defaults=dict(
                    namespace=f"bench-cq-{c}-{q}",
                    cohort=f"cohort-{c}",
                    sharing="LendAndBorrow",
                    borrow_limit_pct=BORROW_PCT,
                    preempt_team_tasks="LowerPriority",
                    fair_share_weight=1.0,
                ),
            )
            ComputeAllocation.objects.update_or_create(
                team=team, instance_type=it, defaults=dict(instances=None, accelerators=None, vcpus=NOMINAL_CPU)
            )
            teams.append(team)
    schedule = []
    for team in teams:
        for cls, count, cpu, every, runtime, _ in CLASSES:
            for i in range(max(1, round(count * fraction))):
                schedule.append((round(i * every, 3), team.name, cls, cpu, runtime))
    schedule.sort(key=lambda s: s[0])
    return user, schedule


def start_processes(env, workers: int) -> list[subprocess.Popen]:
    celery = str(ROOT / ".venv" / "bin" / "celery")
    logs = ROOT / "var" / "log"
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    for i in range(workers):
        procs.append(
            subprocess.Popen(
                [
                    celery,
                    "-A",
                    "portal",
                    "worker",
                    "-l",
                    "WARNING",
                    "-c",
                    "1",
                    "-n",
                    f"bench{i}@%h",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                ],  # fmt: skip
                cwd=ROOT,
                env=env,
                stdout=(logs / f"bench-worker{i}.log").open("w"),  # noqa: SIM115 - lives as long as the worker
                stderr=subprocess.STDOUT,
            )
        )
    procs.append(
        subprocess.Popen(
            [celery, "-A", "portal", "beat", "-l", "WARNING", "-s", str(ROOT / "var" / "bench-beat-schedule")],
            cwd=ROOT,
            env=env,
            stdout=(logs / "bench-beat.log").open("w"),  # noqa: SIM115 - lives as long as beat
            stderr=subprocess.STDOUT,
        )
    )
    return procs


def stop_processes(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()


def submit_in_real_time(user, schedule, clients: int) -> tuple[float, float]:
    """Each client (a thread with its own database connection) submits its teams' workloads on time."""
    import threading

    from django.db import connection

    from scheduling.services import JobRequest, job_submit

    t0 = time.perf_counter()
    lags = [0.0] * clients

    def client(k):
        try:
            for offset, team, cls, cpu, runtime in schedule[k::clients]:
                delay = offset - (time.perf_counter() - t0)
                if delay > 0:
                    time.sleep(delay)
                lags[k] = max(lags[k], -delay)
                job_submit(
                    user=user,
                    request=JobRequest(
                        team=team,
                        name=f"{cls}-{team}",
                        image="bench",
                        vcpus=cpu,
                        pods=1,
                        priority_class=f"bench-{cls}",
                        expected_duration_s=runtime,
                    ),  # fmt: skip
                )
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, max(lags)


def wait_until_done(timeout: float) -> bool:
    from scheduling.models import FINAL_STATES, Job

    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        left = Job.objects.exclude(state__in=FINAL_STATES).count()
        if left == 0:
            return True
        if left != last and int(time.time()) % 10 == 0:
            print(f"  ... {left} jobs not finished yet", flush=True)
            last = left
        time.sleep(0.5)
    return False


def figures(total_cpu: float) -> dict:
    from scheduling.models import Job, JobEvent

    jobs = {j.pk: j for j in Job.objects.select_related("priority_class")}
    events = list(JobEvent.objects.order_by("job_id", "at", "id").values_list("job_id", "at", "to_state"))
    cpu_seconds, open_at = 0.0, {}
    first = min(e[1] for e in events)
    last = max(e[1] for e in events)
    for job_id, at, state in events:
        if state == "admitted":
            open_at[job_id] = at
        elif job_id in open_at and state in ("preempted", "succeeded", "failed", "cancelled"):
            cpu_seconds += jobs[job_id].vcpus * (at - open_at.pop(job_id)).total_seconds()
    waits: dict[str, list[float]] = {}
    for job in jobs.values():
        if job.admitted_at is None and job.finished_at is None:
            continue
        cls = job.priority_class.name.removeprefix("bench-")
        admitted_at = last_admission(job.pk)
        waits.setdefault(cls, []).append((admitted_at - job.submitted_at).total_seconds())
    wall = (last - first).total_seconds()
    return {
        "wall_s": wall,
        "usage_pct": cpu_seconds * 100 / (total_cpu * wall),
        "jobs": len(jobs),
        "preemptions": sum(j.preemption_count for j in jobs.values()),
        **{cls: statistics.fmean(w) for cls, w in waits.items()},
    }


_admissions: dict[int, datetime] = {}


def last_admission(job_id: int):
    if not _admissions:
        from scheduling.models import JobEvent

        for jid, at in JobEvent.objects.filter(to_state="admitted").order_by("at").values_list("job_id", "at"):
            _admissions[jid] = at
    return _admissions[job_id]


def free_quota_latency(user, samples: int) -> dict:
    """One job at a time on an idle cluster: seconds from submit to admitted (server clock), p50 and p95."""
    from scheduling.models import Job, JobState
    from scheduling.services import JobRequest, job_submit

    latencies = []
    for i in range(samples):
        t0 = time.perf_counter()
        job = job_submit(
            user=user,
            request=JobRequest(
                team=f"cq-{i % COHORTS}-0",
                name="probe",
                image="bench",
                vcpus=1,
                priority_class="bench-small",
                expected_duration_s=2,
            ),  # fmt: skip
        )
        while time.perf_counter() - t0 < 10:
            state, admitted_at = Job.objects.filter(pk=job.pk).values_list("state", "admitted_at").get()
            if state != JobState.PENDING:
                break
            time.sleep(0.005)
        seen = time.perf_counter() - t0
        latencies.append(((admitted_at - job.submitted_at).total_seconds(), seen))
        time.sleep(0.3)
    server = sorted(x[0] for x in latencies)
    seen = sorted(x[1] for x in latencies)
    pct = lambda xs, q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    return {"p50_s": pct(server, 0.5), "p95_s": pct(server, 0.95), "seen_p50_s": pct(seen, 0.5),
            "seen_p95_s": pct(seen, 0.95)}  # fmt: skip


def main():
    args = parse_args()
    if not (SHARED / "bench" / "kueue_perf.py").exists():
        print(f"note: {SHARED}/bench/kueue_perf.py is missing; the scenario's shapes are built in here")
    env = environment(args)
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    create_database(args.db)
    import django

    django.setup()
    import redis

    from portal.celery import app

    user, schedule = setup_world(args.fraction)
    r = redis.Redis.from_url(args.redis)
    for key in r.scan_iter("portal:*"):
        r.delete(key)
    app.control.purge()
    total_cpu = COHORTS * PER_COHORT * NOMINAL_CPU
    print(
        f"live loop bench: Kueue baseline x {args.fraction:g} = {len(schedule)} workloads, "
        f"{args.workers} worker(s), {args.clients} clients"
    )
    procs = start_processes(env, args.workers)
    try:
        time.sleep(4)  # workers connect
        cpu0 = time.process_time()
        submit_s, lag = submit_in_real_time(user, schedule, args.clients)
        print(f"  submitted in {submit_s:.1f} s (scenario span {schedule[-1][0]:.1f} s; worst lag {lag:.2f} s)")
        done = wait_until_done(args.timeout)
        result = figures(total_cpu)
        result["finished"] = done
        result["bench_cpu_s"] = time.process_time() - cpu0
        latency = free_quota_latency(user, args.latency_samples)
    finally:
        stop_processes(procs)
    from scheduling.models import AdmissionRun

    runs = list(AdmissionRun.objects.values_list("duration_ms", flat=True))
    print()
    print(f"{'':34}{'portal':>12}{'Kueue':>12}")
    print(f"{'wall time (s)':34}{result['wall_s']:>12.1f}{KUEUE['wall_s']:>12.1f}")
    print(f"{'usage (% of nominal CPU)':34}{result['usage_pct']:>12.1f}{KUEUE['usage_pct']:>12.1f}")
    for cls in ("large", "medium", "small"):
        print(
            f"{'avg creation->admission ' + cls + ' (s)':34}{result.get(cls, float('nan')):>12.2f}{KUEUE[cls]:>12.1f}"
        )
    print(f"{'preemptions':34}{result['preemptions']:>12}")
    print(f"{'admission runs / p50 / max (ms)':34}{len(runs):>12} {statistics.median(runs):.0f} / {max(runs):.0f}")
    for q in ("p50", "p95"):
        seen = latency[f"seen_{q}_s"]
        print(f"{'free quota: submit->admitted ' + q:34}{latency[q + '_s']:>12.3f} s  (seen by a poller {seen:.3f} s)")
    if not result["finished"]:
        print("NOTE: not every job finished before the timeout; figures cover what ran")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    path = out / f"live_loop-{datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps({"args": vars(args), "result": result, "latency": latency, "kueue": KUEUE}, indent=2))
    print(f"figures written to {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
