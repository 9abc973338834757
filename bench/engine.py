#!/usr/bin/env python3
"""Engine speed through simulate's own code path (build the scenario dict, then simulate_scenario).

Prints, never asserts: Kueue's baseline and large-scale scheduler-performance scenarios beside Kueue's
published figures, and a replay of the Philly trace hard-partitioned and shared, each at a quarter, half
and all of the workload set so the growth of cost can be read off.

Usage: .venv/bin/python bench/engine.py [--quick] [baseline] [large-scale] [philly] [starvation]
  starvation: the Philly trace in one shared cohort with arrivals compressed 4x and 8x, backfill none vs
              reserve: the longest and p99 queueing delay of gangs of 32 GPUs or more, the longest of the other
              jobs, how often a gang was overtaken by later jobs of its own team (most for one gang / in all),
              the mean delay of all jobs and GPU utilization (not run by default)
              --setups=Never,Any,one queue  --speedups=4,8  --fraction=1.0 choose the runs (each line also
              prints the offered load: GPU-seconds asked over the arrival window per GPU-second the cluster has)
  --quick  runs baseline and a quarter of the others only (the full run adds Philly at 4x arrival rate)
The "vs nlogn" column is CPU / (n log n) relative to the quarter run; near or below 1 means the cost
grows no faster than n log n.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import sys
import time
from collections import defaultdict
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
sys.path.insert(0, ROOT)

from scheduling.engine import simulate_scenario  # noqa: E402

KUEUE = {
    "baseline": {"wall_s": 351.1, "cpu_s": "~140", "usage": "55.9", "large": 16.5, "medium": 76.8, "small": 215.5},
    "large-scale": {"wall_s": 1179.4, "cpu_s": "?", "usage": ">=31.6", "large": 105.6, "medium": 256.4, "small": 700.4},
}
PHILLY_NODES = {"6214e9": 64, "b436b2": 64, "ee9e8c": 64, "7f04ca": 32, "6c71a0": 32, "0e4a51": 32,
                "11cb48": 16, "e13805": 16, "2869ce": 16, "ed69ec": 8, "103959": 8}  # fmt: skip
FRACTIONS = (0.25, 0.5, 1.0)


def kueue_scenario(name: str) -> dict:
    path = os.path.join(SHARED, "bench", "kueue_perf.py")
    spec = importlib.util.spec_from_file_location("kueue_perf", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.scenario(name)


def subset_kueue(scenario: dict, fraction: float) -> dict:
    """Keep the first `fraction` of each team's workloads of each class (the arrival pattern is unchanged)."""
    counts = defaultdict(int)
    for w in scenario["workloads"]:
        counts[w["name"].rsplit("-", 1)[0]] += 1
    keep = [
        w
        for w in scenario["workloads"]
        if int(w["name"].rsplit("-", 1)[1]) < math.ceil(counts[w["name"].rsplit("-", 1)[0]] * fraction)
    ]
    return {**scenario, "workloads": keep}


def run(scenario: dict) -> tuple[dict, float]:
    start = time.process_time()
    out = simulate_scenario(scenario)
    return out, time.process_time() - start


def admitted_intervals(out: dict) -> dict[str, list[tuple[float, float]]]:
    """Each workload's admitted spans from the event list."""
    spans, open_at = defaultdict(list), {}
    last = max((e["t"] for e in out["events"]), default=0)
    for e in out["events"]:
        if e["type"] == "admitted":
            open_at[e["workload"]] = e["t"]
        elif e["workload"] in open_at:
            spans[e["workload"]].append((open_at.pop(e["workload"]), e["t"]))
    for name, t in open_at.items():
        spans[name].append((t, last))
    return spans


def kueue_figures(scenario: dict, out: dict) -> dict:
    events = out["events"]
    submits = [w["submit"] for w in scenario["workloads"]]
    first = min(submits + [e["t"] for e in events])
    last = max(e["t"] for e in events)
    cpu_of = {w["name"]: w["requests"]["cpu"] for w in scenario["workloads"]}
    used = sum(cpu_of[n] * (b - a) for n, spans in admitted_intervals(out).items() for a, b in spans)
    nominal = sum(t["quota"]["rf"]["cpu"] for t in scenario["teams"])
    first_admit = {}
    for e in events:
        if e["type"] == "admitted":
            first_admit.setdefault(e["workload"], e["t"])
    waits = defaultdict(list)
    for w in scenario["workloads"]:
        if w["name"] in first_admit:
            waits[w["name"].split("-")[-2]].append(first_admit[w["name"]] - w["submit"])
    return {
        "usage_pct": 100 * used / (nominal * (last - first)) if last > first else 0.0,
        "span_s": last - first,
        "wait": {cls: sum(v) / len(v) for cls, v in waits.items()},
        "admitted": len(first_admit),
        "preemptions": sum(1 for e in events if e["type"] == "preempted"),
    }


def philly_scenario(
    shared: bool, fraction: float = 1.0, speedup: float = 1.0, reclaim: str = "Any", one_queue: bool = False
) -> dict:
    path = os.path.join(SHARED, "traces", "philly-pollux", "philly.csv")
    start, stop = datetime(2017, 10, 1), datetime(2017, 11, 30, 23, 59)
    rows = []
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            if not row.get("timestamp") or row["cluster"] not in PHILLY_NODES:
                continue
            when = datetime.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S")
            if start <= when <= stop:
                rows.append((when, row))
    rows.sort(key=lambda item: item[0])
    rows = rows[: math.ceil(len(rows) * fraction)]
    origin = rows[0][0]
    workloads = []
    for i, (when, row) in enumerate(rows):
        gpus = int(row["num_gpus"])
        pods, per_pod = (1, gpus) if gpus <= 8 else ((gpus // 8, 8) if gpus % 8 == 0 else (gpus // 4, 4))
        workloads.append({
            "name": f"j{i}", "team": row["cluster"], "submit": (when - origin).total_seconds() / speedup,
            "requests": {"gpu": per_pod}, "pods": pods,
            "duration": max(1, math.ceil(float(row["duration"]))),
        })  # fmt: skip
    teams = [
        {
            "name": vc,
            "cohort": "philly" if shared else None,
            "quota": {"philly-8gpu": {"count": nodes}},
            "reclaim_within_cohort": reclaim,
        }
        for vc, nodes in PHILLY_NODES.items()
    ]
    if one_queue:  # every job in one queue owning the whole cluster: gangs meet the small jobs head on
        teams = [{"name": "philly", "cohort": None, "quota": {"philly-8gpu": {"count": sum(PHILLY_NODES.values())}}}]
        for w in workloads:
            w["team"] = "philly"
    return {
        "cluster": {"instance_types": [{"name": "philly-8gpu", "count": 352, "capacity": {"gpu": 8}}]},
        "policy": {"task_prioritization": "fcfs", "idle_compute": "fair-share"},
        "teams": teams, "workloads": workloads, "until": 10**9,  # run until every job has finished
    }  # fmt: skip


def philly_figures(scenario: dict, out: dict) -> dict:
    gpus = {w["name"]: w["requests"]["gpu"] * w.get("pods", 1) for w in scenario["workloads"]}
    submit = {w["name"]: w["submit"] for w in scenario["workloads"]}
    events = out["events"]
    first_admit, finished = {}, {}
    for e in events:
        if e["type"] == "admitted":
            first_admit.setdefault(e["workload"], e["t"])
        elif e["type"] == "finished":
            finished[e["workload"]] = e["t"]
    window = max(submit.values())  # utilization over the arrival window, not the long tail after it
    used = sum(gpus[n] * max(0.0, min(b, window) - a) for n, spans in admitted_intervals(out).items() for a, b in spans)
    done = [n for n in finished if n in submit]
    return {
        "jobs": len(scenario["workloads"]),
        "gpu_util_pct": 100 * used / (352 * 8 * window) if window else 0.0,
        "avg_jct_s": sum(finished[n] - submit[n] for n in done) / max(1, len(done)),
        "avg_queue_s": sum(first_admit[n] - submit[n] for n in first_admit) / max(1, len(first_admit)),
        "unfinished": len(scenario["workloads"]) - len(done),
        "preemptions": sum(1 for e in events if e["type"] == "preempted"),
    }


def growth(cpu: float, n: int, base: tuple[float, int] | None) -> float:
    """CPU per n*log(n) relative to the smallest run: at most about 1 means cost grows no worse than n log n."""
    if base is None:
        return 1.0
    return (cpu / (n * math.log(n))) / (base[0] / (base[1] * math.log(base[1])))


def bench_kueue(name: str, fractions) -> list[dict]:
    full = kueue_scenario(name)
    rows = []
    print(f"\n== Kueue {name}: {len(full['workloads'])} workloads, {len(full['teams'])} queues ==")
    published = KUEUE[name]
    print(
        f"Kueue published: wall {published['wall_s']} s, CPU {published['cpu_s']} s, usage {published['usage']} %,"
        f" wait large {published['large']} / medium {published['medium']} / small {published['small']} s"
    )
    print(
        f"{'fraction':>8} {'workloads':>9} {'CPU s':>7} {'us/wl':>6} {'usage %':>7} {'large':>7} {'medium':>7}"
        f" {'small':>7} {'preempt':>7} {'vs nlogn':>8}"
    )
    base = None
    for fraction in fractions:
        scenario = subset_kueue(full, fraction)
        out, cpu = run(scenario)
        fig = kueue_figures(scenario, out)
        n = len(scenario["workloads"])
        wait = fig["wait"]
        print(
            f"{fraction:>8} {n:>9} {cpu:>7.2f} {1e6 * cpu / n:>6.0f} {fig['usage_pct']:>7.1f}"
            f" {wait.get('large', 0):>7.1f} {wait.get('medium', 0):>7.1f} {wait.get('small', 0):>7.1f}"
            f" {fig['preemptions']:>7} {growth(cpu, n, base):>8.2f}"
        )
        base = base or (cpu, n)
        rows.append({"scenario": name, "fraction": fraction, "workloads": n, "cpu_s": cpu, **fig})
    return rows


def bench_philly(fractions, speedups=()) -> list[dict]:
    rows = []
    print("\n== Philly trace replay (2017-10-01..2017-11-30, 11 VCs, 352 x 8 GPUs) ==")
    print(
        f"{'mode':>9} {'fraction':>8} {'jobs':>6} {'CPU s':>7} {'us/job':>6} {'GPU util %':>10} {'avg JCT s':>10}"
        f" {'avg queue s':>11} {'preempt':>7} {'vs nlogn':>8}"
    )
    runs = [(shared, fraction, 1.0) for shared in (False, True) for fraction in fractions]
    runs += [(shared, 1.0, speedup) for speedup in speedups for shared in (False, True)]
    bases: dict[tuple, tuple] = {}
    for shared, fraction, speedup in runs:
        mode = ("shared" if shared else "hard") + (f" x{speedup:g}" if speedup != 1 else "")
        scenario = philly_scenario(shared, fraction, speedup)
        out, cpu = run(scenario)
        fig = philly_figures(scenario, out)
        base = bases.get((shared, speedup))
        print(
            f"{mode:>9} {fraction:>8} {fig['jobs']:>6} {cpu:>7.2f} {1e6 * cpu / fig['jobs']:>6.0f}"
            f" {fig['gpu_util_pct']:>10.1f} {fig['avg_jct_s']:>10.0f} {fig['avg_queue_s']:>11.1f}"
            f" {fig['preemptions']:>7} {growth(cpu, fig['jobs'], base):>8.2f}"
        )
        bases.setdefault((shared, speedup), (cpu, fig["jobs"]))
        rows.append({"scenario": f"philly-{mode}", "fraction": fraction, "speedup": speedup, "cpu_s": cpu, **fig})
    if speedups:
        print("(x4: arrivals four times as fast, for contention; the offered load is otherwise about 0.17)")
    return rows


def starvation_figures(scenario: dict, out: dict) -> dict:
    """Queueing delay of gangs of 32 GPUs or more (max, p99) and of all jobs (mean), and GPU utilization."""
    gpus = {w["name"]: w["requests"]["gpu"] * w.get("pods", 1) for w in scenario["workloads"]}
    submit = {w["name"]: w["submit"] for w in scenario["workloads"]}
    first = {}
    for e in out["events"]:
        if e["type"] == "admitted":
            first.setdefault(e["workload"], e["t"])
    delays = {n: first[n] - submit[n] for n in first}
    gangs = sorted(d for n, d in delays.items() if gpus[n] >= 32)
    p99 = gangs[min(len(gangs) - 1, int(0.99 * len(gangs)))] if gangs else 0.0
    # starvation proper: later jobs of the gang's own team that started before it
    team = {w["name"]: w["team"] for w in scenario["workloads"]}
    by_team: dict[str, list] = defaultdict(list)
    for n in first:
        by_team[team[n]].append((submit[n], first[n]))
    overtaken = [sum(1 for s, a in by_team[team[n]] if s > submit[n] and a < first[n]) for n in first if gpus[n] >= 32]
    return {
        "gangs": len(gangs),
        "gang_max_delay_s": gangs[-1] if gangs else 0.0,
        "gang_p99_delay_s": p99,
        "other_max_delay_s": max((d for n, d in delays.items() if gpus[n] < 32), default=0.0),
        "gang_overtaken_max": max(overtaken, default=0),
        "gang_overtaken_total": sum(overtaken),
        "avg_queue_s": sum(delays.values()) / max(1, len(delays)),
        "gpu_util_pct": philly_figures(scenario, out)["gpu_util_pct"],
        "never_started": len(scenario["workloads"]) - len(first),
    }


def offered_load(scenario: dict) -> float:
    """GPU-seconds asked over the arrival window, per GPU-second the cluster has in it (above 1: overloaded)."""
    window = max(w["submit"] for w in scenario["workloads"]) or 1.0
    asked = sum(w["requests"]["gpu"] * w.get("pods", 1) * w["duration"] for w in scenario["workloads"])
    return asked / (352 * 8 * window)


def bench_starvation(fraction: float, speedups=(4, 8), modes=("Never", "Any", "one queue")) -> list[dict]:
    """The Philly trace with arrivals compressed, backfill none vs reserve, in three set-ups.

    "Never": the virtual clusters as teams of one shared cohort with no preemption between them
    (reclaim_within_cohort Never: Kueue's default ClusterQueue, where a gang can only wait for room, as in
    kubernetes-sigs/kueue#8309). "Any": the same with reclaim (the portal's default): a gang within its
    team's quota takes back what others borrowed. "one queue": every job in a single queue that owns the
    cluster, so gangs and small jobs meet head on.
    """
    rows = []
    print(f"\n== Starvation: Philly, {fraction:g} of the trace, arrivals compressed ==")
    print(
        f"{'set-up':>9} {'speedup':>7} {'load':>5} {'backfill':>8} {'jobs':>6} {'CPU s':>7} {'gangs>=32':>9}"
        f" {'gang max s':>10} {'gang p99 s':>10} {'other max s':>11} {'overtaken':>13} {'avg queue s':>11}"
        f" {'GPU util %':>10}",
        flush=True,
    )
    for mode in modes:
        for speedup in speedups:
            for backfill in ("none", "reserve"):
                one = mode == "one queue"
                scenario = philly_scenario(True, fraction, speedup, "Any" if one else mode, one_queue=one)
                scenario["policy"]["backfill"] = backfill
                out, cpu = run(scenario)
                fig = starvation_figures(scenario, out)
                load = offered_load(scenario)
                print(
                    f"{mode:>9} {'x' + format(speedup, 'g'):>7} {load:>5.2f} {backfill:>8}"
                    f" {len(scenario['workloads']):>6} {cpu:>7.2f} {fig['gangs']:>9}"
                    f" {fig['gang_max_delay_s']:>10.0f} {fig['gang_p99_delay_s']:>10.0f}"
                    f" {fig['other_max_delay_s']:>11.0f}"
                    f" {str(fig['gang_overtaken_max']) + ' / ' + str(fig['gang_overtaken_total']):>13}"
                    f" {fig['avg_queue_s']:>11.1f} {fig['gpu_util_pct']:>10.1f}",
                    flush=True,
                )
                rows.append({
                    "scenario": f"starvation-{mode.replace(' ', '-').lower()}-x{speedup:g}-{backfill}",
                    "fraction": fraction, "setup": mode, "offered_load": load, "cpu_s": cpu, **fig,
                })  # fmt: skip
    return rows


def main(argv: list[str]) -> None:
    if not os.path.isdir(SHARED):
        sys.exit(f"cannot find {SHARED}: the benchmark needs ../shared beside the repository")
    quick = "--quick" in argv
    chosen = [a for a in argv if not a.startswith("--")] or ["baseline", "large-scale", "philly"]
    rows = []
    if "baseline" in chosen:
        rows += bench_kueue("baseline", (1.0,) if quick else FRACTIONS)
    if "large-scale" in chosen:
        rows += bench_kueue("large-scale", (0.25,) if quick else FRACTIONS)
    if "philly" in chosen:
        rows += bench_philly((0.25,) if quick else FRACTIONS, () if quick else (4,))
    if "starvation" in chosen:
        options = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
        setups = tuple(options.get("setups", "Never,Any,one queue").split(","))
        speedups = tuple(float(x) for x in options.get("speedups", "4,8").split(","))
        rows += bench_starvation(float(options.get("fraction", 0.25 if quick else 1.0)), speedups, setups)
    results = os.path.join(ROOT, "bench", "results")
    os.makedirs(results, exist_ok=True)
    target = os.path.join(results, f"engine-{datetime.now():%Y%m%d-%H%M%S}.json")
    with open(target, "w") as handle:
        json.dump(rows, handle, indent=1)
    print(f"\nfigures written to {os.path.relpath(target, ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
