"""Reads of usage over time: chart series, the daily summary report and the per-job report.

Every function takes the teams and instance types to cover as querysets, already narrowed by the one
visibility rule (Team.objects.visible_to) in the form, so pages, CSV and API read the same rows.
"""

from collections import defaultdict
from datetime import timedelta
from itertools import islice

from django.db.models import Avg, Case, Count, F, Q, Sum, Value, When
from django.db.models.functions import Coalesce, TruncDate, TruncDay, TruncHour
from django.utils import timezone

from quotas.history import ACCELERATOR_LABELS
from quotas.models import AcceleratorResource, InstanceType, Team
from quotas.selectors import use_percentages
from scheduling.models import Job, JobEvent, JobState
from scheduling.usage.models import RESOURCES, Granularity, UsageRollup, UsageSample
from scheduling.usage.ranges import Window

OTHER = "other teams"


def _scoped(qs, teams, types, *, team_field="team", type_field="instance_type"):
    """Narrow rows to the teams and instance types given; None means all (no filter, so no extra join)."""
    if teams is not None:
        qs = qs.filter(**{f"{team_field}__in": teams})
    if types is not None:
        qs = qs.filter(**{f"{type_field}__in": types})
    return qs


def _source(window: Window, teams, types):
    """Rows to read for a window and the name of their time column: raw samples or a rollup.

    `teams` and `types` are querysets to narrow to, or None for all of them."""
    if window.step == "raw":
        qs = UsageSample.objects.filter(at__gte=window.start, at__lt=window.end)
        column = "at"
    else:
        start = window.start.replace(minute=0, second=0, microsecond=0)
        if window.step == "day":
            start = timezone.localtime(start).replace(hour=0)
        qs = UsageRollup.objects.filter(granularity=window.step, bucket__gte=start, bucket__lt=window.end)
        column = "bucket"
    return _scoped(qs, teams, types), column


ACCELERATORS = tuple(r for r in AcceleratorResource.values if r)  # "gpu", "neuron": never added together


def resource_facets(types, resource: str) -> list[tuple[str, str, object]]:
    """What one chart may add together: (key, label, instance types) per facet. vCPUs and memory are one facet
    each; accelerators are one facet per accelerator resource the instance types in scope have (GPUs apart from
    Neuron devices), each narrowed to its types. `types` None means every instance type."""
    if resource != "acc":
        return [(resource, RESOURCES[resource], types)]
    scope = InstanceType.objects.all() if types is None else types
    present = set(scope.exclude(accelerator_resource="").values_list("accelerator_resource", flat=True))
    return [(r, ACCELERATOR_LABELS[r], scope.filter(accelerator_resource=r)) for r in ACCELERATORS if r in present]


def in_use_pct(key: str, *, used: float, quota: float) -> int | None:
    """In use as % of quota for one facet, by the team list's rule (None without quota: what is used there is
    all borrowed); None for memory, which no quota page shows as a percentage either."""
    if key == "mem":
        return None
    entries = use_percentages({key: quota}, {key: used})
    return entries[0]["pct"] if entries else None


def team_series(*, window: Window, teams, types, resource: str = "acc") -> dict:
    """Summed over the given teams and types, per time step: used, borrowed, lent, pending, quota, fair share."""
    qs, column = _source(window, teams, types)
    measures = MEASURES
    rows = (
        qs.values(column)
        .annotate(**{m: Sum(f"{m}_{resource}") for m in measures}, pending_jobs=Sum("pending_jobs"))
        .order_by(column)
    )
    out = {"x": [], "pending_jobs": [], **{m: [] for m in measures}}
    for row in rows:
        out["x"].append(row[column])
        for m in (*measures, "pending_jobs"):
            out[m].append(round(row[m] or 0, 3))
    return out


def latest_totals(*, teams, types, resource: str = "acc") -> dict:
    """The latest sample summed over the given teams and types: what is in use, borrowed, pending and the quota
    right now (the tiles above the charts), whatever averaging the charts' range uses."""
    # the latest tick of the whole cluster: a team that had nothing then has no row in it, and that means zero
    at = UsageSample.objects.order_by("-at").values_list("at", flat=True).first()
    qs = _scoped(UsageSample.objects.all(), teams, types)
    if at is None:
        return {"at": None, **dict.fromkeys(MEASURES, 0.0)}
    sums = qs.filter(at=at).aggregate(**{m: Sum(f"{m}_{resource}") for m in MEASURES})
    return {"at": at, **{m: round(v or 0, 3) for m, v in sums.items()}}


def _leaders(window: Window, teams, types, qs, field: str, top: int) -> tuple[list[int], bool]:
    """The `top` biggest users over the window (read from the few daily rollups when there are any), and
    whether any team is left over."""
    start, end = window.day_bounds()
    daily = _scoped(UsageRollup.objects.filter(granularity=Granularity.DAY, bucket__gte=start, bucket__lt=end),
                    teams, types)  # fmt: skip
    ranked = list(daily.values("team_id").annotate(v=Sum(field)).order_by("-v", "team_id")[: top + 1])
    if not ranked:
        ranked = list(qs.values("team_id").annotate(v=Sum(field)).order_by("-v", "team_id")[: top + 1])
    return [r["team_id"] for r in ranked[:top]], len(ranked) > top


def peak_used(*, window: Window, teams, types, resource: str = "acc", charted: list | None = None) -> float:
    """The most in use at any one moment of the window: the highest total of a sample. Longer ranges chart
    hourly or daily averages, whose highest is below the busiest sample (and below "now" when now is busiest).

    Read without scanning every sample of the range: each rollup bucket's peaks, summed, bound what any of its
    samples can total; only the buckets whose bound beats the best total found so far are read sample by sample,
    busiest bound first, and the newest bucket always (samples arrive after its last rollup). A bucket whose
    samples are no longer kept counts its charted average."""
    best = max([*(charted or []), 0.0])
    if window.step == "raw":  # the chart is the samples: its highest point is the busiest sample
        return round(best, 3)
    samples = _scoped(UsageSample.objects.filter(at__gte=window.start, at__lt=window.end), teams, types)

    def busiest(start, end) -> float:
        totals = samples.filter(at__gte=start, at__lt=end).values("at").annotate(total=Sum(f"used_{resource}"))
        return totals.order_by("-total").values_list("total", flat=True).first() or 0.0

    rollups, column = _source(window, teams, types)
    bounds = list(rollups.values(column).annotate(bound=Sum(f"max_used_{resource}")).order_by(f"-{column}"))
    best = max(best, busiest(bounds[0][column] if bounds else window.start, window.end))
    length = timedelta(hours=1) if window.step == "hour" else timedelta(hours=25)  # a local day: 23 to 25 hours
    for row in sorted(bounds[1:], key=lambda r: -r["bound"]):
        if row["bound"] <= best + 1e-9:
            break
        best = max(best, busiest(row[column], row[column] + length))
    return round(best, 3)


MEASURES = ("used", "borrowed", "lent", "pending", "quota", "fair_share")


def usage_overview(*, window: Window, teams, types, resource: str = "acc", top: int = 10) -> tuple[dict, dict]:
    """Both the totals (as team_series) and the usage per team (as usage_by_team) from one grouped scan."""
    qs, column = _source(window, teams, types)
    field = f"used_{resource}"
    lead_ids, has_others = _leaders(window, teams, types, qs, field, top)
    rows = (
        qs.annotate(k=Case(When(team_id__in=lead_ids, then=F("team_id")), default=Value(0)))
        .values(column, "k")
        .annotate(**{m: Sum(f"{m}_{resource}") for m in MEASURES}, pending_jobs=Sum("pending_jobs"))
        .order_by(column)
    )
    totals: dict = {}
    per_team: dict = defaultdict(dict)
    for row in rows:
        t = row[column]
        bucket = totals.setdefault(t, dict.fromkeys((*MEASURES, "pending_jobs"), 0.0))
        for m in (*MEASURES, "pending_jobs"):
            bucket[m] += row[m] or 0
        per_team[t][row["k"]] = row["used"] or 0
    x = sorted(totals)
    series = {"x": x, **{m: [round(totals[t][m], 3) for t in x] for m in (*MEASURES, "pending_jobs")}}
    names = dict(Team.objects.filter(pk__in=lead_ids).values_list("pk", "name"))
    by_team = {names[i]: [round(per_team[t].get(i, 0), 3) for t in x] for i in lead_ids if i in names}
    if has_others:
        by_team[OTHER] = [round(per_team[t].get(0, 0), 3) for t in x]
    return series, {"x": x, "series": by_team}


def usage_by_team(*, window: Window, teams, types, resource: str = "acc", top: int = 10) -> dict:
    """Usage per team per time step: the `top` biggest users by name, the rest summed as 'other teams'."""
    return usage_overview(window=window, teams=teams, types=types, resource=resource, top=top)[1]


def capacity_by_type(types, resource: str = "acc") -> dict[str, float]:
    """Installed capacity per instance type name for one resource (accelerators, vCPUs, GiB)."""
    out = {}
    types = InstanceType.objects.all() if types is None else types
    for it in types.annotate(nodes=Sum("node_groups__node_count")):
        per_node = {"acc": it.accelerators, "cpu": it.vcpus, "mem": it.memory_gib}[resource]
        out[it.name] = (it.nodes or 0) * per_node
    return out


def utilization_now(*, teams=None, types=None) -> list[dict]:
    """The cluster's accelerators in use now, per accelerator resource (GPUs apart from Neuron devices): the
    latest sample, as the usage page's "now" tiles read it, against the installed capacity its charts draw."""
    out = []
    for key, label, facet_types in resource_facets(types, "acc"):
        used = latest_totals(teams=teams, types=facet_types)["used"]
        capacity = sum(capacity_by_type(facet_types).values())
        pct = round(100 * used / capacity) if capacity else None
        out.append({"key": key, "label": label, "used": used, "capacity": capacity, "pct": pct})
    return out


def utilization_by_type(*, window: Window, teams, types, resource: str = "acc") -> dict:
    """Per instance type, the % of its installed capacity in use at each time step (today's capacity)."""
    capacity = capacity_by_type(types, resource)
    qs, column = _source(window, teams, types)
    rows = qs.values(column, "instance_type_id").annotate(v=Sum(f"used_{resource}")).order_by(column)
    type_names = dict(InstanceType.objects.values_list("pk", "name"))
    x = []
    per_type: dict[str, dict] = defaultdict(dict)
    for row in rows:
        if not x or x[-1] != row[column]:
            x.append(row[column])
        per_type[type_names[row["instance_type_id"]]][row[column]] = row["v"] or 0
    series = {
        name: [round(100 * values.get(t, 0) / capacity[name], 2) for t in x]
        for name, values in sorted(per_type.items())
        if capacity.get(name)
    }
    return {"x": x, "series": series, "installed": any(capacity.values())}


def _job_trunc(window: Window, field: str):
    return TruncHour(field) if window.days <= 7 else TruncDay(field)


def wait_times(*, window: Window, teams, types) -> dict:
    """Average and longest wait (submission to admission) of the jobs admitted in each hour or day, in minutes."""
    jobs = Job.objects.filter(admitted_at__gte=window.start, admitted_at__lt=window.end)
    if teams is not None:
        jobs = jobs.filter(team__in=teams)
    if types is not None:
        jobs = jobs.filter(
            Q(assigned_instance_type__in=types) | Q(assigned_instance_type__isnull=True, instance_type__in=types)
        )
    rows = (
        jobs.annotate(t=_job_trunc(window, "admitted_at"), wait=F("admitted_at") - F("submitted_at"))
        .values("t")
        .annotate(avg=Avg("wait"), n=Count("id"))
        .order_by("t")
    )
    out = {"x": [], "avg_minutes": [], "jobs": []}
    for row in rows:
        out["x"].append(row["t"])
        out["avg_minutes"].append(round(row["avg"].total_seconds() / 60, 1) if row["avg"] else 0)
        out["jobs"].append(row["n"])
    return out


def preemptions_by_team(*, window: Window, teams, types) -> dict:
    """Preemptions per team per hour or day, from the jobs' events."""
    events = JobEvent.objects.filter(to_state=JobState.PREEMPTED, at__gte=window.start, at__lt=window.end)
    if teams is not None:
        events = events.filter(job__team__in=teams)
    if types is not None:
        events = events.annotate(it=Coalesce("job__assigned_instance_type", "job__instance_type")).filter(it__in=types)
    rows = (
        events.annotate(t=_job_trunc(window, "at")).values("t", "job__team__name").annotate(n=Count("id")).order_by("t")
    )
    x = []
    per_team: dict[str, dict] = defaultdict(dict)
    for row in rows:
        if not x or x[-1] != row["t"]:
            x.append(row["t"])
        per_team[row["job__team__name"]][row["t"]] = row["n"]
    return {"x": x, "series": {name: [v.get(t, 0) for t in x] for name, v in sorted(per_team.items())}}


# ---- reports -------------------------------------------------------------------------------------------------

SUMMARY_FIELDS = [
    "day",
    "team",
    "instance_type",
    "accelerator_hours",
    "within_quota_accelerator_hours",
    "borrowed_accelerator_hours",
    "quota_accelerator_hours",
    "quota_utilization_pct",
    "idle_quota_accelerator_hours",
    "vcpu_hours",
    "borrowed_vcpu_hours",
    "jobs_started",
    "avg_wait_minutes",
    "preemptions",
    "accelerator",  # gpu, neuron or empty: hours of different accelerator resources are never added together
]

HOURS_UNIT = {"gpu": "GPU-hours", "neuron": "Neuron device-hours", "": "hours (no accelerators)"}


def usage_summary(*, window: Window, teams, types, by_day: bool = True) -> list[dict]:
    """Per day x team x instance type (or, with by_day=False, per team x instance type over the whole window):
    accelerator- and vCPU-hours split into within quota and borrowed, quota utilization, idle quota hours,
    jobs started, their average wait, and preemptions. Whole days: the window is widened to midnight.

    The loop clears a preempted job's assignment, so a preemption of a job that named no instance type has
    no type; with no instance-type filter (types None) it still counts, on a row without an instance type."""
    start, end = window.day_bounds()
    keys = ("day", "team_id", "instance_type_id") if by_day else ("team_id", "instance_type_id")
    usage = _scoped(
        UsageRollup.objects.filter(granularity=Granularity.DAY, bucket__gte=start, bucket__lt=end), teams, types
    )
    if by_day:
        usage = usage.annotate(day=TruncDate("bucket"))
    usage = usage.values(*keys).annotate(
        acc=Sum("acc_hours"),
        acc_borrowed=Sum("borrowed_acc_hours"),
        acc_quota=Sum("quota_acc_hours"),
        acc_idle=Sum("idle_quota_acc_hours"),
        cpu=Sum("cpu_hours"),
        cpu_borrowed=Sum("borrowed_cpu_hours"),
    )
    jobs = _scoped(
        Job.objects.filter(admitted_at__gte=start, admitted_at__lt=end).annotate(
            itype=Coalesce("assigned_instance_type", "instance_type")
        ),
        teams,
        types,
        type_field="itype",
    )
    if by_day:
        jobs = jobs.annotate(day=TruncDate("admitted_at"))
    jobs = jobs.values(*keys[:-1], "itype").annotate(n=Count("id"), wait=Avg(F("admitted_at") - F("submitted_at")))
    events = _scoped(
        JobEvent.objects.filter(to_state=JobState.PREEMPTED, at__gte=start, at__lt=end).annotate(
            team_id=F("job__team_id"), itype=Coalesce("job__assigned_instance_type", "job__instance_type")
        ),
        teams,
        types,
        team_field="job__team",
        type_field="itype",
    )
    if by_day:
        events = events.annotate(day=TruncDate("at"))
    events = events.values(*keys[:-1], "itype").annotate(n=Count("id"))

    rows: dict[tuple, dict] = {}

    def row_for(key):
        if key not in rows:
            rows[key] = dict.fromkeys(("acc", "acc_borrowed", "acc_quota", "acc_idle", "cpu", "cpu_borrowed"), 0.0)
            rows[key].update(jobs=0, wait=None, preemptions=0)
        return rows[key]

    for u in usage:
        row_for(tuple(u[k] for k in keys)).update({k: u[k] or 0 for k in u if k not in keys})
    for j in jobs:
        key = tuple(j[k] for k in keys[:-1]) + (j["itype"],)
        row_for(key).update(jobs=j["n"], wait=j["wait"])
    for e in events:
        row_for(tuple(e[k] for k in keys[:-1]) + (e["itype"],))["preemptions"] = e["n"]

    team_names = dict(Team.objects.filter(pk__in={k[-2] for k in rows}).values_list("pk", "name"))
    types_read = list(
        InstanceType.objects.filter(pk__in={k[-1] for k in rows}).values_list("pk", "name", "accelerator_resource")
    )
    type_names = {pk: name for pk, name, _ in types_read}
    type_resources = {pk: resource for pk, _, resource in types_read}
    out = []
    for key, r in rows.items():
        within = max(r["acc"] - r["acc_borrowed"], 0.0)
        out.append(
            {
                "day": key[0] if by_day else None,
                "team": team_names.get(key[-2], ""),
                "instance_type": type_names.get(key[-1], ""),
                "accelerator_hours": round(r["acc"], 2),
                "within_quota_accelerator_hours": round(within, 2),
                "borrowed_accelerator_hours": round(r["acc_borrowed"], 2),
                "quota_accelerator_hours": round(r["acc_quota"], 2),
                "quota_utilization_pct": round(100 * within / r["acc_quota"], 1) if r["acc_quota"] else None,
                "idle_quota_accelerator_hours": round(r["acc_idle"], 2),
                "vcpu_hours": round(r["cpu"], 2),
                "borrowed_vcpu_hours": round(r["cpu_borrowed"], 2),
                "jobs_started": r["jobs"],
                "avg_wait_minutes": round(r["wait"].total_seconds() / 60, 1) if r["wait"] is not None else None,
                "preemptions": r["preemptions"],
                "accelerator": type_resources.get(key[-1], ""),
            }
        )
    out.sort(key=lambda r: (str(r["day"] or ""), r["team"], r["instance_type"]))
    return out


def usage_summary_in_parts(*, window: Window, teams, types, days: int = 7):
    """The daily summary rows, `days` days at a time (first day first): what a CSV streams, so the first rows go
    out after one part's queries and only a part is held at once."""
    first, end = window.day_bounds()
    start = first
    while start < end:
        stop = min(start + timedelta(days=days), end)
        part = Window(start=start, end=stop, step="day", preset="custom")
        yield from usage_summary(window=part, teams=teams, types=types, by_day=True)
        start = stop


def hours_text(value: float) -> str:
    """An hours figure as the reports print it: one decimal, none when it is a whole number ("30", "4.4")."""
    text = f"{value:.1f}".removesuffix(".0")
    return "0" if text == "-0" else text


def hours_shown(*, used: float, borrowed: float) -> dict[str, str]:
    """A team's hours as its story and the table beside it both print them: rounded once, the part within
    quota derived from the rounded whole, so "used 4.4: 0.6 from its quota, 3.8 borrowed" adds up as printed
    and the table says the same figures."""
    shown_used, shown_borrowed = round(used, 1), round(borrowed, 1)
    shown_within = round(shown_used - shown_borrowed, 1)
    return {"used": hours_text(shown_used), "within": hours_text(shown_within), "borrowed": hours_text(shown_borrowed)}


def team_totals(summary_rows: list[dict]) -> list[dict]:
    """Roll summary rows up per team and accelerator resource (GPU-hours apart from Neuron device-hours), for
    the one-line story a manager reads first. Instance types without accelerators add a row only where jobs ran
    or were preempted on them."""
    teams: dict[tuple, dict] = {}
    for r in summary_rows:
        t = teams.setdefault(
            (r["team"], r["accelerator"]),
            {
                "team": r["team"],
                "resource": r["accelerator"],
                "unit": HOURS_UNIT[r["accelerator"]],
                "used": 0.0,
                "within": 0.0,
                "borrowed": 0.0,
                "quota": 0.0,
                "idle": 0.0,
                "jobs": 0,
                "preemptions": 0,
            },
        )
        t["used"] += r["accelerator_hours"]
        t["within"] += r["within_quota_accelerator_hours"]
        t["borrowed"] += r["borrowed_accelerator_hours"]
        t["quota"] += r["quota_accelerator_hours"]
        t["idle"] += r["idle_quota_accelerator_hours"]
        t["jobs"] += r["jobs_started"]
        t["preemptions"] += r["preemptions"]
    for t in teams.values():
        t["utilization_pct"] = round(100 * t["within"] / t["quota"], 1) if t["quota"] else None
        t["shown"] = hours_shown(used=t["used"], borrowed=t["borrowed"])
    kept = [t for t in teams.values() if t["resource"] or t["jobs"] or t["preemptions"]]
    return sorted(kept, key=lambda t: (-t["used"], t["team"], t["resource"]))


JOB_FIELDS = [
    "job_id",
    "name",
    "team",
    "user",
    "priority_class",
    "instance_type",
    "accelerators",
    "state",
    "submitted",
    "started",
    "ended",
    "wait_minutes",
    "run_minutes",
    "accelerator_hours",
    "times_preempted",
]


def job_report_queryset(*, window: Window, teams, types):
    """The jobs submitted in the window, newest first. A preset window ("last 7 days") runs up to now: its end
    is rounded down to the last rollup for the charts, but a job list has no reason to leave out the newest."""
    jobs = Job.objects.filter(submitted_at__gte=window.start)
    if window.preset == "custom":
        jobs = jobs.filter(submitted_at__lt=window.end)
    if teams is not None:
        jobs = jobs.filter(team__in=teams)
    if types is not None:
        jobs = jobs.filter(
            Q(assigned_instance_type__in=types) | Q(assigned_instance_type__isnull=True, instance_type__in=types)
        )
    return jobs.select_related(
        "team", "submitted_by", "priority_class", "instance_type", "assigned_instance_type"
    ).order_by("-submitted_at", "-id")


def run_intervals(events, *, started_at, finished_at, now) -> list[tuple]:
    """When a job ran, as (from, to) pairs: one per run (a preempted job may run several times), read off its
    events (objects or (to_state, at) pairs, in order); a run still going ends at the job's end, else now."""
    runs, since = [], None
    for event in events:
        state, at = (event.to_state, event.at) if hasattr(event, "to_state") else event
        if state == JobState.RUNNING and since is None:
            since = at
        elif state != JobState.RUNNING and since is not None:
            runs.append((since, at))
            since = None
    if since is not None:
        runs.append((since, finished_at or now))
    if not events and started_at:
        runs.append((started_at, finished_at or now))
    return runs


def _run_seconds(job: Job, events: list, now) -> float:
    """Time spent running, summed over every run."""
    runs = run_intervals(events, started_at=job.started_at, finished_at=job.finished_at, now=now)
    return max(sum((b - a).total_seconds() for a, b in runs), 0.0)


def instance_type_name(job: Job) -> str:
    """The instance type a job ran on, else the one it asked for, else ""."""
    it = job.assigned_instance_type or job.instance_type
    return it.name if it else ""


def wait_minutes(job: Job) -> float | None:
    """Minutes from submit to (latest) admission, one decimal; None while it never was admitted."""
    if not job.admitted_at:
        return None
    return round((job.admitted_at - job.submitted_at).total_seconds() / 60, 1)


def job_report_rows(jobs, *, now=None, chunk: int = 500):
    """Rows of the per-job report for an iterable of jobs; events are read once per chunk of jobs, and only a
    chunk is held at a time, so a CSV of any length streams in constant memory."""
    now = now or timezone.now()
    jobs = iter(jobs)
    while part := list(islice(jobs, chunk)):
        events: dict[int, list] = defaultdict(list)
        for event in JobEvent.objects.filter(job_id__in=[j.pk for j in part]).order_by("at", "id"):
            events[event.job_id].append(event)
        for job in part:
            run = _run_seconds(job, events.get(job.pk, []), now)
            yield {
                "job_id": job.pk,
                "name": job.name,
                "team": job.team.name,
                "user": job.submitted_by.username,
                "priority_class": job.priority_class.name if job.priority_class else "",
                "instance_type": instance_type_name(job),
                "accelerators": job.accelerators * job.pods,
                "state": job.state,
                "submitted": job.submitted_at,
                "started": job.started_at,
                "ended": job.finished_at,
                "wait_minutes": wait_minutes(job),
                "run_minutes": round(run / 60, 1),
                "accelerator_hours": round(run / 3600 * job.accelerators * job.pods, 2),
                "times_preempted": job.preemption_count,
            }


def recent_window(days: int = 7, now=None) -> Window:
    now = now or timezone.now()
    return Window(start=now - timedelta(days=days), end=now, step="hour", preset=f"{days}d")
