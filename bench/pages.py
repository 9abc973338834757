#!/usr/bin/env python3
"""Page speed at scale: the team list, a job's page and the admission-runs page with 1,000 teams and
50,000 pending jobs (and a day of scheduler passes), rendered by Django in-process as an admin.

Builds the data once in its own database (BENCH_PAGES_DATABASE_URL, default portal_h11_pages: it is
emptied), then requests each page --repeat times and prints p50 / p95 / max in milliseconds and the
number of queries per page. Goal: each under 300 ms. Prints; never asserts.

Before the pages, one pass of the scheduler process (scheduling/warm.py) reads the state, decides and publishes
its plan, as it does in production; the pages read that (scheduling/published.py). "first ms" is each page's first
request: the job page's first asks the engine for the estimate of a job nobody asked about before.

Usage: .venv/bin/python bench/pages.py [--teams 1000] [--pending 50000] [--repeat 20] [--db URL] [--keep]
  --keep          reuse the data a previous run built in the same database (when its counts match)
  --no-scheduler  skip the scheduler's pass: the first page plans the cluster and publishes that
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--teams", type=int, default=1000)
    p.add_argument("--pending", type=int, default=50000)
    p.add_argument("--running", type=int, default=2000)
    p.add_argument("--runs", type=int, default=20000, help="AdmissionRun rows (a busy day of passes)")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--keep", action="store_true", help="reuse the data of a previous run in the same database")
    p.add_argument(
        "--no-scheduler", action="store_true", help="no scheduler pass before the pages (they plan and publish)"
    )
    p.add_argument(
        "--db",
        default=os.environ.get("BENCH_PAGES_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/portal_h11_pages"),
    )
    return p.parse_args()


def build(args) -> dict:
    """Teams with quota in cohorts of ten, pending and running jobs spread over them, scheduler passes."""
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from quotas.models import ComputeAllocation, InstanceType, NodeGroup, PriorityClass, Role, Team, User
    from scheduling.models import AdmissionRun, Job, JobEvent

    call_command("migrate", verbosity=0, interactive=False)
    with connection.cursor() as c:
        c.execute(
            "TRUNCATE scheduling_jobevent, scheduling_job, scheduling_admissionrun, quotas_computeallocation,"
            " quotas_configversion, quotas_team_members, quotas_team RESTART IDENTITY CASCADE"
        )
    it, _ = InstanceType.objects.update_or_create(
        name="ml.p5.48xlarge", defaults=dict(family="p5", accelerators=8, vcpus=192, memory_gib=2048)
    )
    NodeGroup.objects.update_or_create(name="p5", defaults=dict(instance_type=it, node_count=args.teams))
    high, _ = PriorityClass.objects.update_or_create(name="high", defaults=dict(weight=100))
    admin, _ = User.objects.update_or_create(username="bench-admin", defaults=dict(role=Role.ADMIN, is_superuser=True))
    teams = Team.objects.bulk_create(
        Team(name=f"team-{i:04d}", namespace=f"ns-team-{i:04d}", cohort=f"cohort-{i // 10}") for i in range(args.teams)
    )
    ComputeAllocation.objects.bulk_create(ComputeAllocation(team=t, instance_type=it, accelerators=8) for t in teams)
    now = timezone.now()
    jobs = []
    for i in range(args.pending + args.running):
        running = i < args.running
        jobs.append(
            Job(
                team=teams[i % len(teams)],
                submitted_by=admin,
                name=f"job-{i}",
                instance_type=it,
                accelerators=4,
                vcpus=48,
                memory_gib=512,
                image="bench",
                priority_class=high if i % 3 == 0 else None,
                expected_duration_s=3600,
                submitted_at=now - timedelta(seconds=args.pending + args.running - i),
                state="running" if running else "pending",
                reason="running" if running else "waiting: team-x uses 8 of its 8 GPUs on ml.p5.48xlarge",
                assigned_instance_type=it if running else None,
                placement=[i % args.teams] if running else None,
                admitted_at=now - timedelta(seconds=600) if running else None,
                started_at=now - timedelta(seconds=600) if running else None,
            )  # fmt: skip
        )
    Job.objects.bulk_create(jobs, batch_size=5000)
    JobEvent.objects.bulk_create(
        (JobEvent(job=j, at=j.submitted_at, to_state="pending", reason="submitted") for j in jobs), batch_size=5000
    )
    AdmissionRun.objects.bulk_create(
        (
            AdmissionRun(
                started_at=now - timedelta(seconds=4 * i),
                duration_ms=20 + i % 50,
                trigger="warm:submit",
                admitted=i % 3,
                pending=args.pending,
            )  # fmt: skip
            for i in range(args.runs)
        ),
        batch_size=5000,
    )
    with connection.cursor() as c:
        c.execute("ANALYZE")
    probe = Job.objects.filter(state="pending").order_by("-pk").first()  # the last in the queue
    return {"admin": admin, "probe": probe}


def kept(args) -> dict | None:
    """The world a previous run built, if the database holds one of the same size."""
    from django.core.management import call_command

    from quotas.models import Team, User
    from scheduling.models import Job

    call_command("migrate", verbosity=0, interactive=False)
    admin = User.objects.filter(username="bench-admin").first()
    if admin is None or Team.objects.count() != args.teams:
        return None
    if Job.objects.filter(state="pending").count() != args.pending:
        return None
    return {"admin": admin, "probe": Job.objects.filter(state="pending").order_by("-pk").first()}


def measure(client, url: str, repeat: int) -> dict:
    from django.db import connection

    queries = []
    t0 = time.perf_counter()
    with connection.execute_wrapper(lambda execute, sql, *args: queries.append(sql) or execute(sql, *args)):
        response = client.get(url)
    first = (time.perf_counter() - t0) * 1000
    assert response.status_code == 200, (url, response.status_code)
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        response = client.get(url)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    times.sort()
    return {
        "p50_ms": statistics.median(times),
        "p95_ms": times[min(len(times) - 1, int(0.95 * len(times)))],
        "max_ms": times[-1],
        "first_ms": first,
        "cpu_p50_ms": statistics.median(cpu),  # this process only (not PostgreSQL): steadier on a shared machine
        "queries": len(queries),
        "bytes": len(response.content),
    }


def main():
    args = parse_args()
    os.environ.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DATABASE_URL=args.db,
        SECRET_KEY=os.environ.get("SECRET_KEY", "bench-only-secret-key-" + "x" * 40),
        DEBUG="false",
        ALLOWED_HOSTS="testserver",
        SECURE_SSL_REDIRECT="false",
        STATIC_MANIFEST="false",  # no collectstatic needed
        LOG_LEVEL="WARNING",
    )
    os.environ.pop("REDIS_URL", None)  # per-process cache: every request renders
    from live_loop import create_database  # noqa: E402 - bench/live_loop.py

    create_database(args.db)
    import django

    django.setup()
    from django.test import Client

    t0 = time.perf_counter()
    world = (kept(args) if args.keep else None) or build(args)
    print(f"built {args.teams} teams, {args.pending} pending + {args.running} running jobs, {args.runs} passes "
          f"in {time.perf_counter() - t0:.0f} s")  # fmt: skip
    if not args.no_scheduler:
        from scheduling.warm import WarmScheduler

        t0 = time.perf_counter()
        result = WarmScheduler(carry_out=lambda: None).run_pass(trigger="bench")
        print(f"the scheduler's first pass (reads everything, decides, publishes its plan for the pages): "
              f"{time.perf_counter() - t0:.1f} s, {result.admitted} admitted, {result.pending} pending")  # fmt: skip
    client = Client()
    client.force_login(world["admin"])
    pages = {
        "team list (/teams/)": "/teams/",
        "job page (/jobs/<last pending>/)": f"/jobs/{world['probe'].pk}/",
        "job page status fragment (polled)": f"/jobs/{world['probe'].pk}/status/",
        "admission runs (/admission-runs/)": "/admission-runs/",
    }
    results = {}
    print(f"\n{'page':40}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'first ms':>9}{'CPU p50':>9}{'queries':>9}")
    for label, url in pages.items():
        r = measure(client, url, args.repeat)
        results[label] = r
        flag = "" if r["p95_ms"] < 300 else "   over 300 ms"
        print(
            f"{label:40}{r['p50_ms']:>9.0f}{r['p95_ms']:>9.0f}{r['max_ms']:>9.0f}{r['first_ms']:>9.0f}{r['cpu_p50_ms']:>9.0f}"
            f"{r['queries']:>9}{flag}"
        )
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    path = out / f"pages-{datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps({"args": vars(args), "pages": results}, indent=2))
    print(f"figures written to {path.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    main()
