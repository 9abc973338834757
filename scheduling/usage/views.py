"""Usage pages: the dashboard, a team's usage, the manager reports with CSV exports, and alerts.

Every view reads through UsageFilterForm, whose team choices are Team.objects.visible_to(user): admins and
managers see every team, a scientist only their own (another team's page is a 404). Alerts are for admins
to set and managers to read.
"""

import csv
import hashlib
import itertools
from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.core.cache import cache
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from quotas import roles
from quotas.models import Team
from scheduling.selectors import newest_first_in_chunks
from scheduling.tables import configure
from scheduling.usage import alerts as alert_services
from scheduling.usage import charts, digest, figures, selectors, top_jobs
from scheduling.usage.forms import AlertRuleForm, UsageFilterForm
from scheduling.usage.models import RESOURCES, AlertEvent, AlertRule, AlertRuleChange, DigestFrequency
from scheduling.usage.ranges import DEFAULT_PRESET, PRESET_LABELS
from scheduling.usage.tables import JobReportTable, SummaryTable, TeamTotalsTable, TopJobsTable

ROLLUP_SECONDS = 300  # how often the beat rolls samples up (portal/celery.py)


def _timeout(cleaned) -> float:
    """How long what a window shows stays true: a sample period for raw samples, else a rollup period."""
    return settings.USAGE_SAMPLE_SECONDS if cleaned["window"].step == "raw" else ROLLUP_SECONDS


def _filters(request, **initial):
    form = UsageFilterForm(request.GET or None, user=request.user)
    if request.GET and not form.is_valid():
        return form, None
    if not request.GET:
        form = UsageFilterForm({**initial}, user=request.user)
        form.is_valid()
    return form, form.cleaned_data


def _page(request, form, *, view: str, template: str, partial: str, build=None, extra=None, cached=True, timeout=None):
    """Render the page body once per window and audience and reuse it: the data behind it changes only as
    often as samples (raw) or rollups arrive. htmx gets the body alone (filters swap it in place)."""
    selected = form.cleaned_data.get("range") if form.is_valid() else form.data.get("range")
    base = {
        "form": form,
        "presets": PRESET_LABELS,
        "resources": RESOURCES,
        "selected_range": selected or DEFAULT_PRESET,
        "kept": [(k, v) for k, v in request.GET.items() if k.endswith(("sort", "per_page"))],
        **(extra or {}),
    }

    def body():
        context = dict(base)
        if form.is_valid() and build is not None:
            context.update(build())
        return render_to_string(partial, context, request=request)

    if form.is_valid() and cached:
        html = cache.get_or_set(form.cache_key(view), body, timeout or _timeout(form.cleaned_data))
    else:
        html = body()
    if request.htmx and not request.htmx.boosted:
        return HttpResponse(html)
    return render(request, template, {**base, "body": html})


def _chart_context(form, cleaned, *, kind: str, teams, team=None) -> dict:
    data = figures.cached(
        kind=kind,
        window=cleaned["window"],
        teams=teams,
        types=form.instance_types(),
        resource=cleaned["resource"],
        instance_type=cleaned.get("instance_type"),
        team=team,
    )
    return {**data, "window": cleaned["window"], "resource": cleaned["resource"]}


def dashboard(request):
    form, cleaned = _filters(request)
    return _page(
        request,
        form,
        view="dashboard",
        template="usage/dashboard.html",
        partial="usage/_dashboard_body.html",
        build=lambda: _chart_context(
            form,
            cleaned,
            # one team chosen on the dashboard: that team's chart beside the cluster's utilization
            kind="dashboard-team" if cleaned.get("team") else "dashboard",
            teams=form.teams(),
            team=cleaned.get("team"),
        ),
        cached=False,  # the figures are cached (and rendered ahead by the worker); the page around them is cheap
    )


def team_usage(request, name):
    team = get_object_or_404(Team.objects.visible_to(request.user), name=name)
    form, cleaned = _filters(request)
    if cleaned:
        cleaned["team"] = team
    return _page(
        request,
        form,
        view=f"team-{team.pk}",
        template="usage/team.html",
        partial="usage/_dashboard_body.html",
        build=lambda: _chart_context(form, cleaned, kind="team", teams=Team.objects.filter(pk=team.pk), team=team),
        cached=False,
        extra={"team": team, "hide_team": True},
    )


def _report_data(form, cleaned) -> dict:
    rows = selectors.usage_summary(
        window=cleaned["window"], teams=form.teams(), types=form.instance_types(), by_day=False
    )
    totals = selectors.team_totals(rows)
    figure = charts.as_json(charts.team_hours_figure(totals[:25])) if totals else None
    return {"rows": rows, "totals": totals, "figure": figure}


def _report_context(request, form, cleaned) -> dict:
    # The rows change only as often as rollups arrive: kept per filters, sorted and paged per request.
    data = cache.get_or_set(form.cache_key("reports-data"), lambda: _report_data(form, cleaned), _timeout(cleaned))
    return {
        **data,
        "team_table": configure(request, TeamTotalsTable(list(data["totals"]), prefix="teams-")),
        "summary_table": configure(request, SummaryTable(list(data["rows"]), prefix="summary-")),
        "window": cleaned["window"],
        "query": form.query_string(),
    }


def _tables_state(request) -> str:
    """The order, page and page size of a page's tables, for the key its body is kept under."""
    state = sorted((k, v) for k, v in request.GET.items() if k.endswith(("sort", "page")))
    return hashlib.sha1(repr(state).encode()).hexdigest()[:16]


def reports(request):
    form, cleaned = _filters(request, range="30d")
    # The body is kept per filters and per order and page of its tables: the default view costs a cache read.
    tables_state = _tables_state(request)
    return _page(
        request,
        form,
        view=f"reports-{tables_state}",
        template="usage/reports.html",
        partial="usage/_reports_body.html",
        build=lambda: _report_context(request, form, cleaned),
    )


def _csv_name(kind: str, cleaned) -> str:
    window = cleaned["window"]
    return f"{kind}-{window.first_day:%Y%m%d}-{window.last_day:%Y%m%d}.csv"


def _bad_filters(form) -> HttpResponse:
    errors = "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in form.errors.items())
    return HttpResponse(f"Bad filters: {errors}\n", status=400, content_type="text/plain")


def _cell(value):
    if isinstance(value, datetime):
        return timezone.localtime(value).strftime("%Y-%m-%d %H:%M:%S")
    return "" if value is None else value


class _Echo:
    def write(self, value):
        return value


CSV_CACHE_MAX_BYTES = 8 * 2**20


def summary_csv(request):
    form, cleaned = _filters(request, range="30d")
    if cleaned is None:
        return _bad_filters(form)
    # Streamed a week at a time as the database aggregates it. The text is also kept (up to 8 MiB) for as long as
    # the rollups it reads stay unchanged, so ten managers pulling 90 days cost one pass.
    key = form.cache_key("summary-csv")
    ready = cache.get(key)
    writer = csv.writer(_Echo())

    def lines():
        if ready is not None:
            yield ready
            return
        kept, size = [], 0
        rows = selectors.usage_summary_in_parts(
            window=cleaned["window"], teams=form.teams(), types=form.instance_types()
        )
        for line in itertools.chain(
            [writer.writerow(selectors.SUMMARY_FIELDS)],
            (writer.writerow([_cell(row[f]) for f in selectors.SUMMARY_FIELDS]) for row in rows),
        ):
            if kept is not None:
                kept.append(line)
                size += len(line)
                if size > CSV_CACHE_MAX_BYTES:
                    kept = None
            yield line
        if kept is not None:
            cache.set(key, "".join(kept), _timeout(cleaned))

    response = StreamingHttpResponse(lines(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{_csv_name("usage-summary", cleaned)}"'
    return response


def jobs_report(request):
    form, cleaned = _filters(request, range="7d")

    def build():
        jobs = selectors.job_report_queryset(window=cleaned["window"], teams=form.teams(), types=form.instance_types())
        table = configure(request, JobReportTable(jobs)).attach_reports()
        return {"table": table, "window": cleaned["window"], "query": form.query_string()}

    return _page(
        request,
        form,
        view="jobs",
        template="usage/jobs_report.html",
        partial="usage/_jobs_report_body.html",
        build=build,
        cached=False,
    )


def jobs_csv(request):
    form, cleaned = _filters(request, range="7d")
    if cleaned is None:
        return _bad_filters(form)
    jobs = selectors.job_report_queryset(window=cleaned["window"], teams=form.teams(), types=form.instance_types())
    writer = csv.writer(_Echo())

    def lines():
        yield writer.writerow(selectors.JOB_FIELDS)
        for row in selectors.job_report_rows(newest_first_in_chunks(jobs)):
            yield writer.writerow([_cell(row[f]) for f in selectors.JOB_FIELDS])

    response = StreamingHttpResponse(lines(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{_csv_name("jobs", cleaned)}"'
    return response


def _top_jobs(form, cleaned) -> list[dict]:
    """The ranking, kept for a sample period: sorting and paging through it, or exporting it, reads it once."""
    return cache.get_or_set(
        form.cache_key("top-jobs"),
        lambda: top_jobs.top_jobs(window=cleaned["window"], teams=form.teams(), types=form.instance_types()),
        settings.USAGE_SAMPLE_SECONDS,
    )


def top_jobs_report(request):
    form, cleaned = _filters(request, range="7d")

    def build():
        table = configure(request, TopJobsTable(list(_top_jobs(form, cleaned))))
        start, end = top_jobs.bounds(cleaned["window"], timezone.now())
        return {"table": table, "start": start, "end": end, "top": top_jobs.TOP, "query": form.query_string()}

    return _page(
        request,
        form,
        view=f"top-jobs-{_tables_state(request)}",
        template="usage/top_jobs.html",
        partial="usage/_top_jobs_body.html",
        build=build,
        timeout=settings.USAGE_SAMPLE_SECONDS,  # as long as the ranking is kept
    )


def top_jobs_csv(request):
    form, cleaned = _filters(request, range="7d")
    if cleaned is None:
        return _bad_filters(form)
    writer = csv.writer(_Echo())

    def lines():
        yield writer.writerow(top_jobs.FIELDS)
        for row in _top_jobs(form, cleaned):
            yield writer.writerow([_cell(row[f]) for f in top_jobs.FIELDS])

    response = StreamingHttpResponse(lines(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{_csv_name("top-jobs", cleaned)}"'
    return response


@require_POST
def digest_settings(request):
    """The profile page's choice: no digest, daily or weekly."""
    frequency = request.POST.get("frequency", "")
    if frequency not in DigestFrequency.values:
        messages.error(request, "Choose no digest, daily or weekly.")
        return redirect("profile")
    sub = digest.digest_subscribe(user=request.user, frequency=frequency)
    if sub.frequency == DigestFrequency.OFF:
        messages.success(request, "No usage digest will be sent to you.")
    elif not request.user.email:
        messages.warning(
            request, f"{sub.get_frequency_display()} digest chosen, but your account has no e-mail address."
        )
    else:
        messages.success(request, f"{sub.get_frequency_display()} usage digest: it goes to {request.user.email}.")
    return redirect("profile")


# ---- alerts ----------------------------------------------------------------------------------------------------


def _require_reader(user):
    roles.require(user, "read_alerts")


def _require_admin(user):
    roles.require(user, "change_alerts")


@require_http_methods(["GET", "POST"])
def alerts(request):
    _require_reader(request.user)
    form = None
    if roles.may(request.user, "change_alerts"):
        form = AlertRuleForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            rule = alert_services.alert_rule_create(data=form.cleaned_data, by=request.user)
            messages.success(request, f"Alert rule added: {rule}.")
            return redirect("usage:alerts")
    elif request.method == "POST":
        roles.require(request.user, "change_alerts")
    events = AlertEvent.objects.select_related("rule", "team")
    context = {
        "form": form,
        "rules": AlertRule.objects.select_related("team"),
        "active": events.filter(resolved_at__isnull=True),
        "history": events.prefetch_related("deliveries")[:100],
        "rule_changes": AlertRuleChange.objects.select_related("by", "team")[:50],
    }
    return render(request, "usage/alerts.html", context, status=400 if form is not None and form.errors else 200)


@require_http_methods(["GET", "POST"])
def alert_rule_edit(request, pk):
    _require_admin(request.user)
    rule = get_object_or_404(AlertRule, pk=pk)
    form = AlertRuleForm(request.POST or None, instance=rule)
    if request.method == "POST" and form.is_valid():
        alert_services.alert_rule_update(rule=rule, data=form.cleaned_data, by=request.user)
        messages.success(request, f"Alert rule updated: {rule}.")
        return redirect("usage:alerts")
    return render(
        request, "usage/alert_rule_edit.html", {"form": form, "rule": rule}, status=400 if form.errors else 200
    )


@require_POST
def alert_rule_delete(request, pk):
    _require_admin(request.user)
    rule = get_object_or_404(AlertRule, pk=pk)
    text = str(rule)
    alert_services.alert_rule_delete(rule=rule, by=request.user)
    messages.success(request, f"Alert rule deleted: {text}.")
    return redirect("usage:alerts")
