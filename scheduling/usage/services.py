"""Writes of usage data: sampling the cluster, rolling samples up, pruning old samples."""

import logging
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Sum
from django.db.models.functions import Greatest, TruncDay, TruncHour
from django.utils import timezone

from quotas.models import ComputeAllocation, InstanceType, Team
from scheduling.models import QUEUED_STATES, Job
from scheduling.usage.models import (
    ENGINE_RESOURCE,
    RESOURCES,
    Granularity,
    UsageRollup,
    UsageSample,
    measure_fields,
)

log = logging.getLogger(__name__)

# A gap longer than this many sampling intervals means the sampler was down: that time is not usage.
MAX_GAP_INTERVALS = 3


def _resource_key(resource: str, instance_type: InstanceType) -> str:
    return instance_type.accelerator_key if resource == "acc" else ENGINE_RESOURCE[resource]


def pending_demand() -> dict[tuple[int, int], dict[str, float]]:
    """What queued jobs ask for, per (team id, instance type id): accelerators, vCPUs, memory, and jobs.

    A job that names no instance type counts against the type its team has the most accelerator quota on
    (then vCPU quota): where the engine would look first.
    """
    preferred: dict[int, tuple[float, float, int]] = {}
    for alloc in ComputeAllocation.objects.select_related("instance_type"):
        resolved = alloc.resolved()
        key = (
            resolved.get(alloc.instance_type.accelerator_key, 0) if alloc.instance_type.accelerator_key else 0,
            resolved.get("cpu", 0),
            alloc.instance_type_id,
        )
        if alloc.team_id not in preferred or key > preferred[alloc.team_id]:
            preferred[alloc.team_id] = key
    demand: dict[tuple[int, int], dict[str, float]] = defaultdict(
        lambda: dict.fromkeys(("acc", "cpu", "mem", "jobs"), 0)
    )
    queued = Job.objects.filter(state__in=QUEUED_STATES).values_list(
        "team_id", "instance_type_id", "accelerators", "vcpus", "memory_gib", "pods"
    )
    for team_id, type_id, acc, cpu, mem, pods in queued:
        type_id = type_id or (preferred[team_id][2] if team_id in preferred else None)
        if type_id is None:
            continue
        row = demand[(team_id, type_id)]
        row["acc"] += acc * pods
        row["cpu"] += cpu * pods
        row["mem"] += mem * pods
        row["jobs"] += 1
    return demand


def sample_rows(*, at: datetime, seconds: float, standings: dict, demand: dict, teams: dict, types: list):
    """Sample rows from team standings ({team name: TeamStanding}), pending demand ({(team id, type id): ...}),
    teams ({name: id}) and instance types; rows that would be all zeros are left out."""
    by_id = {it.pk: it for it in types}
    by_name = {it.name: it for it in types}
    rows = []
    for team_name, standing in standings.items():
        team_id = teams.get(team_name)
        if team_id is None:
            continue
        type_names = set(standing.quota) | set(standing.usage) | set(standing.lent) | set(standing.fair_share)
        type_names |= {by_id[it_id].name for (t_id, it_id) in demand if t_id == team_id and it_id in by_id}
        for type_name in sorted(type_names):
            it = by_name.get(type_name)
            if it is None:
                continue
            values = {}
            for resource in RESOURCES:
                key = _resource_key(resource, it)
                for measure, source in (
                    ("used", standing.usage),
                    ("borrowed", standing.borrowed),
                    ("lent", standing.lent),
                    ("quota", standing.quota),
                    ("fair_share", standing.fair_share),
                ):
                    values[f"{measure}_{resource}"] = float(source.get(type_name, {}).get(key, 0) or 0) if key else 0.0
            pending = demand.get((team_id, it.pk), {})
            for resource in RESOURCES:
                values[f"pending_{resource}"] = float(pending.get(resource, 0))
            values["pending_jobs"] = float(pending.get("jobs", 0))
            if any(values.values()):
                rows.append(UsageSample(at=at, team_id=team_id, instance_type_id=it.pk, seconds=seconds, **values))
    return rows


def usage_sample_record(*, now: datetime | None = None, standings: dict | None = None) -> int:
    """Record one sample per team and instance type; returns how many rows were written.

    `standings` defaults to scheduling.status.team_statuses(), the same figures the pages show.
    """
    now = (now or timezone.now()).replace(microsecond=0)
    if standings is None:
        from scheduling.status import team_statuses

        standings = team_statuses(now=now)
    interval = settings.USAGE_SAMPLE_SECONDS
    previous = UsageSample.objects.filter(at__lt=now).aggregate(m=Max("at"))["m"]
    gap = (now - previous).total_seconds() if previous else None
    seconds = gap if gap is not None and 0 < gap <= MAX_GAP_INTERVALS * interval else interval
    rows = sample_rows(
        at=now,
        seconds=seconds,
        standings=standings,
        demand=pending_demand(),
        teams=dict(Team.objects.values_list("name", "pk")),
        types=list(InstanceType.objects.all()),
    )
    with transaction.atomic():
        UsageSample.objects.filter(at=now).delete()
        UsageSample.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def _hours(expr):
    return Sum(expr * F("seconds")) / 3600.0


def _rollup_from(queryset, bucket_expr, *, weight_field: str, hours_from_samples: bool):
    """Aggregate rows (samples or hourly rollups) into buckets: time-weighted averages, maxima, hours."""
    weighted = {f"w_{f}": Sum(F(f) * F(weight_field)) for f in measure_fields() + ["pending_jobs"]}
    if hours_from_samples:
        hours = {
            "acc_hours": _hours(F("used_acc")),
            "borrowed_acc_hours": _hours(F("borrowed_acc")),
            "quota_acc_hours": _hours(F("quota_acc")),
            "idle_quota_acc_hours": _hours(Greatest(F("quota_acc") - F("used_acc") + F("borrowed_acc"), 0.0)),
            "cpu_hours": _hours(F("used_cpu")),
            "borrowed_cpu_hours": _hours(F("borrowed_cpu")),
            "quota_cpu_hours": _hours(F("quota_cpu")),
        }
        maxima = {f"max_{m}": Max(m) for m in ("used_acc", "used_cpu", "used_mem", "pending_acc")}
        samples = {"n": Sum(1)}
    else:
        hours = {
            name: Sum(name)
            for name in (
                "acc_hours",
                "borrowed_acc_hours",
                "quota_acc_hours",
                "idle_quota_acc_hours",
                "cpu_hours",
                "borrowed_cpu_hours",
                "quota_cpu_hours",
            )
        }
        maxima = {f"max_{m}": Max(f"max_{m}") for m in ("used_acc", "used_cpu", "used_mem", "pending_acc")}
        samples = {"n": Sum("samples")}
    return (
        queryset.annotate(b=bucket_expr)
        .values("b", "team_id", "instance_type_id")
        .annotate(total_seconds=Sum(weight_field), **weighted, **hours, **maxima, **samples)
        .order_by()
    )


ROLLUP_UPDATE_FIELDS = (
    measure_fields()
    + ["pending_jobs", "samples", "seconds", "max_used_acc", "max_used_cpu", "max_used_mem", "max_pending_acc"]
    + ["acc_hours", "borrowed_acc_hours", "quota_acc_hours", "idle_quota_acc_hours"]
    + ["cpu_hours", "borrowed_cpu_hours", "quota_cpu_hours"]
)


def usage_rollup(*, granularity: str, start: datetime, end: datetime) -> int:
    """(Re)compute the rollups whose buckets start in [start, end): hourly from raw samples, daily from the
    hourly rollups. Idempotent: running it twice leaves the same rows. Returns the number of buckets written."""
    if granularity == Granularity.HOUR:
        start = start.replace(minute=0, second=0, microsecond=0)
        source = UsageSample.objects.filter(at__gte=start, at__lt=end)
        groups = _rollup_from(source, TruncHour("at"), weight_field="seconds", hours_from_samples=True)
    elif granularity == Granularity.DAY:
        local = timezone.localtime(start)
        start = local.replace(hour=0, minute=0, second=0, microsecond=0)
        source = UsageRollup.objects.filter(granularity=Granularity.HOUR, bucket__gte=start, bucket__lt=end)
        groups = _rollup_from(source, TruncDay("bucket"), weight_field="seconds", hours_from_samples=False)
    else:
        raise ValueError(f"unknown granularity {granularity!r}: use 'hour' or 'day'")
    rows = []
    for g in groups:
        weight = g["total_seconds"] or 0
        averages = {f: (g[f"w_{f}"] or 0) / weight if weight else 0 for f in measure_fields() + ["pending_jobs"]}
        rows.append(
            UsageRollup(
                granularity=granularity,
                bucket=g["b"],
                team_id=g["team_id"],
                instance_type_id=g["instance_type_id"],
                samples=g["n"] or 0,
                seconds=weight,
                **averages,
                **{k: g[k] or 0 for k in ROLLUP_UPDATE_FIELDS if k.startswith("max_") or k.endswith("_hours")},
            )
        )
    with transaction.atomic():
        UsageRollup.objects.bulk_create(
            rows,
            batch_size=1000,
            update_conflicts=True,
            unique_fields=["granularity", "bucket", "team", "instance_type"],
            update_fields=ROLLUP_UPDATE_FIELDS,
        )
    return len(rows)


def usage_rollup_recent(*, now: datetime | None = None) -> tuple[int, int]:
    """The beat's rollup: the current and previous hour, then the current and previous day."""
    now = now or timezone.now()
    hours = usage_rollup(granularity=Granularity.HOUR, start=now - timedelta(hours=1), end=now + timedelta(hours=1))
    days = usage_rollup(granularity=Granularity.DAY, start=now - timedelta(days=1), end=now + timedelta(days=1))
    return hours, days


def usage_prune(*, now: datetime | None = None, retention_days: int | None = None) -> int:
    """Delete raw samples older than the retention (the rollups keep the long history)."""
    retention_days = settings.USAGE_RAW_RETENTION_DAYS if retention_days is None else retention_days
    if retention_days < 1:
        raise ValueError("USAGE_RAW_RETENTION_DAYS must be at least 1: hourly rollups are built from raw samples")
    cutoff = (now or timezone.now()) - timedelta(days=retention_days)
    deleted, _ = UsageSample.objects.filter(at__lt=cutoff).delete()
    return deleted
