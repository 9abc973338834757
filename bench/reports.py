#!/usr/bin/env python3
"""Usage pages under load: the dashboard, a team's 30-day chart and the 90-day summary report.

Prints, never asserts. Builds a dedicated PostgreSQL database (portal_reportsbench, dropped and recreated)
with 100 teams, 20 instance types and 90 days of history written with COPY: daily and hourly rollups for
every team on the types it has quota on, raw samples for the last 24 hours, and jobs with their events.
Then serves the portal with gunicorn on 127.0.0.1 and sends each page from 10 concurrent clients, printing
p50 / p95 / max latency and throughput, and writing them to bench/results/reports-<timestamp>.json.

The CSV exports are measured against their goals: every CSV of 100,000 rows starts within 1 s and streams
at constant memory (Python's peak allocation while streaming 10,000 rows and while streaming 100,000 rows
should be the same), and the 90-day summary CSV answers with p95 under 1 s under 10 clients.

Usage: .venv/bin/python bench/reports.py [--requests 200] [--clients 10] [--workers 4] [--keep]
  --keep  reuse the database if it already holds the data (skips generation)
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DB_NAME = os.environ.get("BENCH_DB", "portal_reportsbench")  # another name keeps parallel runs apart
DB_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
ENV = {
    "DATABASE_URL": DB_URL,
    "SECRET_KEY": "bench-only-secret-key-" + "x" * 40,
    "DEBUG": "false",
    "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
    "SECURE_SSL_REDIRECT": "false",
    "SESSION_COOKIE_SECURE": "false",
    "CSRF_COOKIE_SECURE": "false",
    "STATIC_MANIFEST": "false",
    "LOG_LEVEL": "WARNING",
    "CELERY_TASK_ALWAYS_EAGER": "true",
}
os.environ.update(ENV)
os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings"

TEAMS, TYPES, DAYS, TYPES_PER_TEAM, RAW_HOURS, JOBS_PER_TEAM_DAY = 100, 20, 90, 4, 24, 12  # 108,000 jobs


def recreate_database():
    import psycopg

    with psycopg.connect("postgres://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def copy_rows(model, columns, rows) -> int:
    from django.db import connection

    table = model._meta.db_table
    n = 0
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
            n += 1
    return n


def measure_columns():
    from scheduling.usage.models import UsageRollup

    return [f.column for f in UsageRollup._meta.concrete_fields if f.column != "id"]


def generate(now: datetime) -> dict:
    """Inventory, teams, allocations, a manager, rollups, raw samples and jobs. Returns row counts."""
    from django.db import connection

    from quotas.models import ComputeAllocation, InstanceType, NodeGroup, Role, Team, User
    from scheduling.models import Job, JobEvent
    from scheduling.usage.models import UsageRollup, UsageSample

    rng = random.Random(2026)
    types = InstanceType.objects.bulk_create(
        InstanceType(name=f"ml.bench{i:02d}.xlarge", family=f"b{i}", accelerator_kind="GPU", accelerator_resource="gpu",
                     accelerators=(1, 4, 8)[i % 3], vcpus=(8, 48, 192)[i % 3], memory_gib=(32, 192, 2048)[i % 3])
        for i in range(TYPES)
    )  # fmt: skip
    NodeGroup.objects.bulk_create(
        NodeGroup(name=f"ng-{it.name}", instance_type=it, node_count=rng.randint(8, 40)) for it in types
    )
    teams = Team.objects.bulk_create(Team(name=f"team-{i:03d}", namespace=f"ns-team-{i:03d}") for i in range(TEAMS))
    pairs = []
    allocations = []
    for i, team in enumerate(teams):
        for it in rng.sample(types, TYPES_PER_TEAM):
            quota = it.accelerators * rng.randint(1, 4)
            allocations.append(ComputeAllocation(team=team, instance_type=it, accelerators=quota))
            pairs.append((team, it, quota, rng.uniform(0.3, 1.1), i))
    ComputeAllocation.objects.bulk_create(allocations)
    manager = User.objects.create_user(username="bench-manager", password="bench-pass-123!", role=Role.MANAGER)
    scientist = User.objects.create_user(username="bench-scientist", password="bench-pass-123!", role=Role.SCIENTIST)

    start = (now - timedelta(days=DAYS)).replace(hour=0, minute=0, second=0, microsecond=0)
    columns = measure_columns()

    def level(load, quota, t):
        daily = 0.75 + 0.25 * math.sin(2 * math.pi * (t.hour - 8) / 24)
        return max(0.0, quota * load * daily * rng.uniform(0.85, 1.15))

    def rollup_rows(granularity, step_hours, count):
        for team, it, quota, load, _ in pairs:
            for k in range(count):
                bucket = start + timedelta(hours=step_hours * k)
                if bucket > now:
                    break
                used = level(load, quota, bucket)
                borrowed = max(used - quota, 0.0)
                seconds = step_hours * 3600.0
                h = seconds / 3600
                values = {
                    "granularity": granularity, "bucket": bucket, "team_id": team.pk, "instance_type_id": it.pk,
                    "samples": int(seconds // 60), "seconds": seconds,
                    "used_acc": used, "used_cpu": used * 12, "used_mem": used * 100,
                    "borrowed_acc": borrowed, "borrowed_cpu": borrowed * 12, "borrowed_mem": borrowed * 100,
                    "lent_acc": 0.0, "lent_cpu": 0.0, "lent_mem": 0.0,
                    "pending_acc": rng.choice((0.0, 0.0, float(it.accelerators))), "pending_cpu": 0.0,
                    "pending_mem": 0.0, "quota_acc": quota, "quota_cpu": quota * 24.0, "quota_mem": quota * 250.0,
                    "fair_share_acc": quota * 1.1, "fair_share_cpu": quota * 26.0, "fair_share_mem": quota * 270.0,
                    "pending_jobs": 0.0, "max_used_acc": used * 1.2, "max_used_cpu": used * 14,
                    "max_used_mem": used * 120, "max_pending_acc": float(it.accelerators),
                    "acc_hours": used * h, "borrowed_acc_hours": borrowed * h, "quota_acc_hours": quota * h,
                    "idle_quota_acc_hours": max(quota - used + borrowed, 0) * h, "cpu_hours": used * 12 * h,
                    "borrowed_cpu_hours": borrowed * 12 * h, "quota_cpu_hours": quota * 24 * h,
                }  # fmt: skip
                yield [values[c] for c in columns]

    counts = {}
    t = time.perf_counter()
    counts["daily_rollups"] = copy_rows(UsageRollup, columns, rollup_rows("day", 24, DAYS + 1))
    counts["hourly_rollups"] = copy_rows(UsageRollup, columns, rollup_rows("hour", 1, (DAYS + 1) * 24))

    sample_columns = [f.column for f in UsageSample._meta.concrete_fields if f.column != "id"]

    def raw_rows():
        first = (now - timedelta(hours=RAW_HOURS)).replace(second=0, microsecond=0)
        for minute in range(RAW_HOURS * 60):
            at = first + timedelta(minutes=minute)
            for team, it, quota, load, _ in pairs:
                used = float(round(level(load, quota, at)))
                borrowed = max(used - quota, 0.0)
                values = dict.fromkeys(sample_columns, 0.0)
                values.update(
                    at=at,
                    team_id=team.pk,
                    instance_type_id=it.pk,
                    seconds=60.0,
                    used_acc=used,
                    used_cpu=used * 12,
                    used_mem=used * 100,
                    borrowed_acc=borrowed,
                    quota_acc=quota,
                    quota_cpu=quota * 24.0,
                    fair_share_acc=quota * 1.1,
                )
                yield [values[c] for c in sample_columns]

    counts["raw_samples"] = copy_rows(UsageSample, sample_columns, raw_rows())

    # Every column of the job table (other engineers add fields): model defaults unless given here.
    job_fields = [f for f in Job._meta.concrete_fields if f.column != "id"]
    job_columns = [f.column for f in job_fields]

    def job_row(**given):
        return [given[f.attname] if f.attname in given else f.get_default() for f in job_fields]

    def job_rows():
        for team, it, _, _, _ in pairs[::TYPES_PER_TEAM]:
            for day in range(DAYS):
                for j in range(JOBS_PER_TEAM_DAY):
                    submitted = start + timedelta(days=day, minutes=rng.randint(0, 1439))
                    admitted = submitted + timedelta(minutes=rng.expovariate(1 / 20))
                    finished = admitted + timedelta(minutes=rng.randint(10, 600))
                    done = finished < now
                    yield job_row(
                        team_id=team.pk, submitted_by_id=scientist.pk, name=f"job-{day}-{j}", instance_type_id=it.pk,
                        accelerators=it.accelerators, vcpus=8.0, memory_gib=64.0, pods=1, image="img",
                        state="succeeded" if done else "running", submitted_at=submitted, admitted_at=admitted,
                        started_at=admitted, finished_at=finished if done else None, assigned_instance_type_id=it.pk,
                        preemption_count=rng.choice((0, 0, 0, 1)), placement=None, priority_class_id=None,
                    )  # fmt: skip

    counts["jobs"] = copy_rows(Job, job_columns, job_rows())

    def event_rows():
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, submitted_at, admitted_at, finished_at, preemption_count FROM scheduling_job")
            for job_id, submitted, admitted, finished, preempted in cursor.fetchall():
                yield [job_id, submitted, "", "pending", "submitted"]
                yield [job_id, admitted, "pending", "admitted", ""]
                yield [job_id, admitted, "admitted", "running", ""]
                if preempted:
                    yield [job_id, admitted + timedelta(minutes=5), "running", "preempted", "reclaim quota lent"]
                if finished:
                    yield [job_id, finished, "running", "succeeded", ""]

    counts["job_events"] = copy_rows(JobEvent, ["job_id", "at", "from_state", "to_state", "reason"], list(event_rows()))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    counts["generation_s"] = round(time.perf_counter() - t, 1)
    return counts, manager, teams


def session_cookie(user) -> str:
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    return store.session_key


def cold_timings(user, pages) -> dict:
    """Each page computed from the database with no cached figures: what the first reader of a window waits."""
    from django.core.cache import cache
    from django.test import Client

    client = Client()
    client.force_login(user)
    out = {}
    for label, path in pages:
        times = []
        for _ in range(5):
            cache.clear()
            t = time.perf_counter()
            response = client.get(path)
            if hasattr(response, "streaming_content"):
                b"".join(response.streaming_content)
            times.append((time.perf_counter() - t) * 1000)
            assert response.status_code == 200, (path, response.status_code)
        out[label] = round(statistics.median(times), 1)
    return out


def csv_timings(user, exports) -> dict:
    """Per export: time to the first byte, total time and rows; then Python's peak memory while streaming the
    first 10,000 rows and all of them (tracemalloc, a second pass: it slows the streaming)."""
    import tracemalloc

    from django.test import Client

    client = Client()
    client.force_login(user)
    client.get("/healthz")  # the first request of a process pays for URL resolving and connecting: not the CSV's
    out = {}
    for label, path in exports:
        t = time.perf_counter()
        response = client.get(path)
        chunks = iter(response.streaming_content)
        first = next(chunks)
        ttfb = time.perf_counter() - t
        rows = first.count(b"\n") + sum(chunk.count(b"\n") for chunk in chunks)
        total = time.perf_counter() - t
        peaks = {}
        for limit in (10_000, None):
            tracemalloc.start()
            seen = 0
            for chunk in client.get(path).streaming_content:
                seen += chunk.count(b"\n")
                if limit and seen >= limit:
                    break
            peaks[limit or "all"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        out[label] = {
            "rows": rows - 1,
            "first_byte_s": round(ttfb, 3),
            "total_s": round(total, 1),
            "peak_mib_10k": round(peaks[10_000], 1),
            "peak_mib_all": round(peaks["all"], 1),
        }
    return out


FIRST_REQUEST = """
import sys, time
from wsgiref.util import setup_testing_defaults
from portal.wsgi import application  # what a web server's worker loads before it serves anything
path, cookie = sys.argv[1], sys.argv[2]
environ = {"PATH_INFO": path.split("?")[0], "QUERY_STRING": path.partition("?")[2],
           "HTTP_COOKIE": f"sessionid={cookie}", "HTTP_HOST": "127.0.0.1", "SERVER_NAME": "127.0.0.1"}
setup_testing_defaults(environ)
status = []
t = time.perf_counter()
body = iter(application(environ, lambda s, h, exc=None: status.append(s)))
next(body)
print(status[0].split()[0], time.perf_counter() - t)
"""


def first_request_ttfb(path: str, cookie: str) -> float:
    """Seconds to the first byte of `path` as the first request a fresh worker serves: the process loads the WSGI
    application as gunicorn's worker does, then calls it once. Whatever a first request imports, connects or
    plans lazily is in the figure."""
    out = subprocess.run([sys.executable, "-c", FIRST_REQUEST, path, cookie], cwd=ROOT, env={**os.environ, **ENV},
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert out[0] == "200", out
    return round(float(out[1]), 3)


def wait_for(port: int, timeout: float = 30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/login/")  # /healthz answers 503 where no scheduler runs: not the web server's fault
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("gunicorn did not come up")


def load(port: int, path: str, cookie: str, clients: int, requests: int) -> dict:
    latencies: list[float] = []
    errors = []
    lock = threading.Lock()
    per_client = math.ceil(requests / clients)

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for _ in range(per_client):
            t = time.perf_counter()
            conn.request("GET", path, headers={"Cookie": f"sessionid={cookie}"})
            response = conn.getresponse()
            response.read()
            elapsed = time.perf_counter() - t
            with lock:
                latencies.append(elapsed)
                if response.status != 200:
                    errors.append(response.status)
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0
    latencies.sort()
    pct = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000  # noqa: E731
    return {
        "path": path,
        "requests": len(latencies),
        "errors": len(errors),
        "p50_ms": round(pct(0.50), 1),
        "p95_ms": round(pct(0.95), 1),
        "max_ms": round(latencies[-1] * 1000, 1),
        "mean_ms": round(statistics.mean(latencies) * 1000, 1),
        "req_per_s": round(len(latencies) / wall, 1),
    }


def serve_and_load(args, pages, cookie) -> list[dict]:
    """Serve the portal with gunicorn and send each page from concurrent clients; p50 / p95 / max per page."""
    cmd = [os.path.join(ROOT, ".venv", "bin", "gunicorn"), "portal.wsgi", "-b", f"127.0.0.1:{args.port}",
           "-w", str(args.workers), "--log-level", "warning", "--timeout", "120"]  # fmt: skip
    results = []
    server = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **ENV}, start_new_session=True)
    try:
        wait_for(args.port)
        print(f"\nwarm, under load: gunicorn {args.workers} sync workers on 127.0.0.1:{args.port}; "
              f"{args.clients} concurrent clients, "
              f"{args.requests} requests per page (after {args.clients * 2} warm-up requests)")  # fmt: skip
        print(f"{'page':<46} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'req/s':>7} {'errors':>6}")
        for label, path in pages:
            load(args.port, path, cookie, args.clients, args.clients * 2)
            r = load(args.port, path, cookie, args.clients, args.requests)
            r["page"] = label
            results.append(r)
            print(
                f"{label:<46} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['max_ms']:>8} {r['req_per_s']:>7} {r['errors']:>6}"
            )
        summary = next(r for r in results if r["path"].startswith("/reports/summary.csv"))
        verdict = "met" if summary["p95_ms"] < 1000 else "NOT met"
        print(f"goal: 90-day summary CSV p95 under 1 s with {args.clients} clients: {summary['p95_ms']} ms ({verdict})")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--parts", default="csv,cold,load", help="which measurements: csv, cold, load")
    args = parser.parse_args()

    import django

    if not args.keep:
        recreate_database()
    django.setup()
    from django.core.management import call_command

    from quotas.models import Team, User
    from scheduling.usage.models import UsageRollup, UsageSample

    now = datetime.now(UTC)
    if args.keep and UsageRollup.objects.exists():
        counts = {"daily_rollups": UsageRollup.objects.filter(granularity="day").count(),
                  "hourly_rollups": UsageRollup.objects.filter(granularity="hour").count(),
                  "raw_samples": UsageSample.objects.count()}  # fmt: skip
        manager = User.objects.get(username="bench-manager")
        teams = list(Team.objects.order_by("name"))
    else:
        call_command("migrate", verbosity=0)
        counts, manager, teams = generate(now)
    cookie = session_cookie(manager)
    print(f"data: {TEAMS} teams x {TYPES_PER_TEAM} of {TYPES} instance types, {DAYS} days")
    for key, value in counts.items():
        print(f"  {key:>16}: {value:,}" if isinstance(value, int) else f"  {key:>16}: {value}")

    from django.db import connections

    connections.close_all()
    team = teams[42].name
    pages = [
        ("dashboard (7 d, hourly rollups, all teams)", "/usage/"),
        (f"team 30-day chart ({team})", f"/usage/teams/{team}/?range=30d"),
        ("90-day summary report (all teams)", "/reports/?range=90d"),
        ("dashboard 24 h (raw samples, all teams)", "/usage/?range=24h"),
        ("90-day daily summary CSV (all teams)", "/reports/summary.csv?range=90d"),
        ("top jobs, 90 days (all teams)", "/reports/top-jobs/?range=90d"),
    ]
    exports = [
        ("jobs list CSV (all jobs)", "/jobs/?mine=false&export=csv"),
        ("per-job report CSV (90 days)", "/reports/jobs.csv?range=90d"),
        ("daily summary CSV (90 days)", "/reports/summary.csv?range=90d"),
    ]
    parts = set(args.parts.split(","))
    csvs, cold, results = {}, {}, []
    if "csv" in parts:
        csvs = csv_timings(manager, exports)
    for label, path in exports:
        csvs.setdefault(label, {})["first_byte_cold_s"] = first_request_ttfb(path, cookie)
    print("\nCSV exports (goal: first byte within 1 s, constant memory; in-process, one at a time):")
    print("  (1st byte cold: the first request of a fresh process; warm: after other requests)")
    print(f"  {'export':<32} {'rows':>9} {'1st cold':>9} {'1st warm':>9} {'total':>7} {'peak 10k':>9} {'peak all':>9}")
    for label, r in csvs.items():
        r = {"rows": 0, "first_byte_s": "-", "total_s": "-", "peak_mib_10k": "-", "peak_mib_all": "-", **r}
        print(f"  {label:<32} {r['rows']:>9,} {r['first_byte_cold_s']:>8}s {r['first_byte_s']:>8}s {r['total_s']:>6}s "
              f"{r['peak_mib_10k']:>7} MiB {r['peak_mib_all']:>5} MiB")  # fmt: skip
    connections.close_all()
    if "cold" in parts:
        cold = cold_timings(manager, pages)
        print("\ncold (cache empty, one request at a time, in-process; median of 5):")
        for label, ms in cold.items():
            print(f"  {label:<46} {ms:>8} ms")
    connections.close_all()
    if "load" in parts:
        results = serve_and_load(args, pages, cookie)

    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    out = os.path.join(ROOT, "bench", "results", f"reports-{datetime.now():%Y%m%d-%H%M%S}.json")
    with open(out, "w") as f:
        json.dump(
            {
                "counts": counts,
                "clients": args.clients,
                "workers": args.workers,
                "cold_ms": cold,
                "csv": csvs,
                "results": results,
            },
            f,
            indent=2,
        )
    print(f"\nfigures written to {os.path.relpath(out, ROOT)}")


if __name__ == "__main__":
    main()
