"""Prometheus metrics at /metrics: a custom collector that reads the database at scrape time.

Reading at scrape time (rather than process-local counters) makes every web process answer the same
numbers whichever process ran the admission loop. Guarded by a bearer token (METRICS_TOKEN), or open when
METRICS_PUBLIC is set.
"""

import hmac

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db.models import Count, Q, Sum
from django.http import HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from quotas.models import InstanceType
from scheduling.models import AdmissionRun, Job, JobEvent, JobState

# Loop duration buckets, in seconds.
LOOP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
GIB = 2**30
PREEMPTION_REASONS = ("reclaim", "fair-share", "priority")


def preemption_reason(text: str) -> str:
    """The engine's reason for a preemption, read back from the plain words the loop wrote on the event."""
    from scheduling.loop import PREEMPTION_WHY

    for reason, words in PREEMPTION_WHY.items():
        if text and text.endswith(words):
            return reason
    lowered = (text or "").lower()
    if "reclaim" in lowered:
        return "reclaim"
    if "fair" in lowered:
        return "fair-share"
    if "priority" in lowered:
        return "priority"
    return "other"


class PortalCollector:
    """Team standings (gauges), admissions and preemptions (counters), loop duration (histogram)."""

    def collect(self):
        yield from self.standing_gauges()
        yield from self.job_counters()
        yield from self.loop_metrics()

    def standing_gauges(self):
        from scheduling.status import team_statuses

        accel = {it.name: it.accelerator_key for it in InstanceType.objects.all()}
        labels = ["team", "instance_type", "resource"]
        gauges = {
            name: GaugeMetricFamily(f"portal_team_{name}", help_text, labels=labels)
            for name, help_text in (
                ("quota", "Nominal quota of the team on the instance type"),
                ("usage", "Resources the team's running jobs use"),
                ("borrowed", "Part of usage beyond the team's quota"),
                ("lent", "The team's idle quota in use by other teams"),
                ("fair_share", "The team's fair share given current demand"),
            )
        }
        pending = GaugeMetricFamily("portal_team_pending_jobs", "Jobs waiting to be admitted", labels=["team"])
        for team, standing in sorted(team_statuses().items()):
            for name in gauges:
                for type_name, resources in sorted(getattr(standing, name).items()):
                    for resource, value in sorted(resources.items()):
                        label = "accelerators" if resource == accel.get(type_name) and resource else resource
                        if resource == "memory":  # Prometheus counts in base units: bytes, not GiB
                            label, value = "memory_bytes", float(value) * GIB
                        gauges[name].add_metric([team, type_name, label], float(value))
            pending.add_metric([team], float(standing.pending))
        yield from gauges.values()
        yield pending

    def job_counters(self):
        admissions = CounterMetricFamily("portal_admissions", "Jobs admitted by the admission loop", labels=["team"])
        for team, n in (
            JobEvent.objects.filter(to_state=JobState.ADMITTED)
            .values_list("job__team__name")
            .annotate(n=Count("id"))
            .order_by("job__team__name")
        ):
            admissions.add_metric([team], n)
        yield admissions
        preemptions = CounterMetricFamily(
            "portal_preemptions", "Jobs preempted, by team and reason", labels=["team", "reason"]
        )
        counts: dict[tuple[str, str], int] = {}
        for team, reason, n in (
            JobEvent.objects.filter(to_state=JobState.PREEMPTED)
            .values_list("job__team__name", "reason")
            .annotate(n=Count("id"))
            .order_by()
        ):
            key = (team, preemption_reason(reason))
            counts[key] = counts.get(key, 0) + n
        for (team, reason), n in sorted(counts.items()):
            preemptions.add_metric([team, reason], n)
        yield preemptions
        jobs = GaugeMetricFamily("portal_jobs", "Jobs by state", labels=["state"])
        by_state = dict(Job.objects.values_list("state").annotate(n=Count("id")).order_by())
        for state in JobState.values:
            jobs.add_metric([state], by_state.get(state, 0))
        yield jobs

    def loop_metrics(self):
        buckets = {f"b{i}": Count("id", filter=Q(duration_ms__lte=b * 1000)) for i, b in enumerate(LOOP_BUCKETS)}
        agg = AdmissionRun.objects.filter(duration_ms__isnull=False).aggregate(
            n=Count("id"), total=Sum("duration_ms"), **buckets
        )
        histogram = HistogramMetricFamily("portal_admission_loop_duration_seconds", "Admission loop run time")
        histogram.add_metric(
            [],
            [(str(b), agg[f"b{i}"]) for i, b in enumerate(LOOP_BUCKETS)] + [("+Inf", agg["n"])],
            sum_value=(agg["total"] or 0) / 1000,
        )
        yield histogram
        errors = CounterMetricFamily("portal_admission_loop_errors", "Admission loop runs that failed")
        errors.add_metric([], AdmissionRun.objects.exclude(error="").count())
        yield errors


def authorized(request) -> bool:
    if settings.METRICS_PUBLIC:
        return True
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    # Compared as bytes: a header may carry any character, and compare_digest refuses non-ASCII text.
    given = header[7:].strip().encode("utf-8", "surrogateescape")
    return bool(token) and header.startswith("Bearer ") and hmac.compare_digest(given, token.encode())


@login_not_required
@require_GET
def metrics(request):
    if not authorized(request):
        response = HttpResponse(
            "metrics need 'Authorization: Bearer <METRICS_TOKEN>'\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PortalCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
