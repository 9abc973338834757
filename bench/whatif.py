#!/usr/bin/env python3
"""What-if replay of 30 days of the demo: how long from "replay this draft" to the comparison.

Prints, never asserts. Builds a dedicated PostgreSQL database (portal_whatifbench, dropped and recreated)
with the demo cluster and 30 days of history: the Philly sample spread over the window by the demo teams,
run through the engine's simulator and written as jobs with their events (scheduling.whatif.synthetic).
Then replays the window under the unchanged configuration and under a draft (half the p5 nodes), as the
Celery task does (read the window, simulate the current configuration and the draft, compare), and prints
the wall and CPU time of each phase. --repeat N lays the sample N times over the window (N x 3,000 jobs).

Usage: .venv/bin/python bench/whatif.py [--days 30] [--repeat 1 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DB_NAME = "portal_whatifbench"
os.environ.update(
    {
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB_NAME}",
        "SECRET_KEY": "bench-only-secret-key-" + "x" * 40,
        "DEBUG": "false",
        "LOG_LEVEL": "WARNING",
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }
)
os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings"


def recreate_database():
    import psycopg

    with psycopg.connect("postgres://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def one_size(days: int, repeat: int) -> dict:
    from django.core.management import call_command

    from quotas.demo import demo_load
    from quotas.models import NodeGroup
    from scheduling.whatif import services
    from scheduling.whatif.synthetic import record_simulated_history

    recreate_database()
    from django.db import connections

    connections.close_all()
    call_command("migrate", verbosity=0)
    demo_load()
    info, wall, _ = timed(lambda: record_simulated_history(days=days, repeat=repeat))
    print(f"  history: {info['jobs']} jobs over {days} days, {info['events']} engine events, written in {wall:.1f} s")
    half_p5 = {
        "node_groups": [
            {"name": g.name, "instance_type": g.instance_type.name,
             "node_count": g.node_count // 2 if "p5" in g.name else g.node_count}
            for g in NodeGroup.objects.select_related("instance_type")
        ]
    }  # fmt: skip
    out = {"days": days, "repeat": repeat, "jobs": info["jobs"]}
    for label, draft in (("unchanged", {}), ("half the p5 nodes", half_p5)):

        def replay(draft=draft):
            created = services.replay_create(user=None, draft=draft, window_days=days, now=info["end"], enqueue=False)
            return services.replay_run(replay=created)

        done, wall, cpu = timed(replay)
        phases = done.results["timing"]
        print(
            f"  replay ({label}): {wall:.2f} s wall, {cpu:.2f} CPU-s "
            f"(read {phases['read_s']} s, current config {phases['baseline_s']} s, draft {phases['draft_s']} s); "
            f"cluster average wait {done.results['cluster']['recorded']['avg_wait_s'] / 60:.1f} min happened, "
            f"{done.results['cluster']['draft']['avg_wait_s'] / 60:.1f} min under the draft"
        )
        out[label] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "phases": phases}
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--repeat", type=int, nargs="+", default=[1, 3])
    args = parser.parse_args()
    import django

    django.setup()
    results = []
    for repeat in args.repeat:
        print(f"{args.days} days of the demo, the Philly sample x{repeat}:")
        results.append(one_size(args.days, repeat))
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    path = os.path.join(ROOT, "bench", "results", f"whatif-{datetime.now(UTC):%Y%m%dT%H%M%S}.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
    print(f"written to {path}")


if __name__ == "__main__":
    main()
