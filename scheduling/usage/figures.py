"""The usage pages' figures, built once per window and kept in the cache.

A figure set (the charts as JSON and the tiles above them) depends only on what it shows: the dashboard for
a set of teams, or one team's page; the range's window; the resource; the instance type. Pages read it from
the cache and build it only when it is missing; the worker renders the standard ranges ahead of them after
every sample and rollup (render_standard), so a cold page view costs what a warm one does.
"""

from __future__ import annotations

import logging
import time

from django.core.cache import cache
from django.utils import timezone

from quotas.models import Role, Team, User
from scheduling.usage import charts, selectors
from scheduling.usage.ranges import PRESETS, Window, page_window

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 15 * 60  # a key names its window, so it is never stale; this only frees the memory


def scope_of(teams) -> str:
    """'all', or the team ids the figures cover."""
    return "all" if teams is None else ",".join(str(pk) for pk in sorted(teams.values_list("pk", flat=True)))


def figure_key(*, kind: str, scope: str, window: Window, resource: str, instance_type=None) -> str:
    parts = [kind, scope, window.preset, window.start.isoformat(), window.end.isoformat(), resource,
             instance_type.pk if instance_type else ""]  # fmt: skip
    return "usage-figures:v3:" + ":".join(str(p) for p in parts)


def _has_data(series: dict, latest: dict) -> bool:
    return any(any(series[m]) or latest[m] for m in ("used", "quota", "pending", "lent"))


def build(*, window: Window, teams, types, resource: str, team: Team | None = None, utilization: bool = True) -> dict:
    """The charts (JSON) and tiles for the dashboard (team None) or one team's usage: a usage chart and a row of
    tiles per facet (GPUs apart from Neuron devices), then utilization, pending demand and preemptions."""
    facets, figures = [], {}
    for key, label, facet_types in selectors.resource_facets(types, resource):
        latest = selectors.latest_totals(teams=teams, types=facet_types, resource=resource)
        if team is not None:
            totals = selectors.team_series(window=window, teams=teams, types=facet_types, resource=resource)
            usage = charts.team_usage_figure(totals, unit_label=label, title=f"{team.name}: {label} against quota")
        else:
            totals, by_team = selectors.usage_overview(window=window, teams=teams, types=facet_types, resource=resource)
            capacity = sum(selectors.capacity_by_type(facet_types, resource).values())
            usage = charts.teams_stack_figure(by_team, unit_label=label, capacity=capacity, borrowed=totals)
        peak = selectors.peak_used(
            window=window, teams=teams, types=facet_types, resource=resource, charted=[*totals["used"], latest["used"]]
        )
        facets.append({"key": key, "label": label, "totals": totals, "latest": latest, "peak": peak, "usage": usage})
    shown = [f for f in facets if _has_data(f["totals"], f["latest"])] or facets[:1]
    waits = selectors.wait_times(window=window, teams=teams, types=types)
    if utilization:
        figures["utilization"] = charts.utilization_figure(
            selectors.utilization_by_type(window=window, teams=teams, types=types, resource=resource)
        )
    figures |= {
        "pending": charts.pending_figure([(f["label"], f["totals"]) for f in shown], waits),
        "preemptions": charts.preemptions_figure(
            selectors.preemptions_by_team(window=window, teams=teams, types=types)
        ),
    }
    for fig in [*figures.values(), *(f["usage"] for f in shown)]:
        fig.update_xaxes(range=[window.start.isoformat(), window.end.isoformat()])
    return {
        "facets": [
            {"key": f["key"], "label": f["label"], "tiles": _tiles(f), "figure": charts.as_json(f["usage"])}
            for f in shown
        ],
        "figures": {name: charts.as_json(fig) for name, fig in figures.items()},
        "at": max((f["latest"]["at"] for f in shown if f["latest"]["at"]), default=None),
    }


def _tiles(facet: dict) -> dict:
    """The figures beside one facet's chart: now (the latest sample), the average of the charted steps, and the
    peak: the busiest sample of the range (never below now, nor below a charted average)."""
    used, latest = facet["totals"]["used"], facet["latest"]
    return {
        "now": latest["used"],
        "quota_now": latest["quota"],
        "pct_now": selectors.in_use_pct(facet["key"], used=latest["used"], quota=latest["quota"]),
        "borrowed_now": latest["borrowed"],
        "lent_now": latest["lent"],
        "pending_now": latest["pending"],
        "peak": facet["peak"],
        "average": round(sum(used) / len(used), 1) if used else 0,
    }


def cached(*, kind: str, window: Window, teams, types, resource: str, instance_type=None, team=None) -> dict:
    """The figure set from the cache, built (and kept) if the worker has not rendered it yet."""
    key = figure_key(kind=kind, scope=scope_of(teams), window=window, resource=resource, instance_type=instance_type)
    return cache.get_or_set(
        key,
        lambda: build(
            window=window, teams=teams, types=types, resource=resource, team=team, utilization=kind == "dashboard"
        ),  # fmt: skip
        TIMEOUT_SECONDS,
    )


def _scopes() -> list:
    """What the dashboard is read for: every team (admins, managers), and each scientist's set of teams."""
    scopes: dict[str, object] = {"all": None}
    for user in User.objects.filter(role=Role.SCIENTIST, is_active=True).prefetch_related("teams"):
        ids = sorted(t.pk for t in user.teams.all())
        if ids:
            scopes[",".join(map(str, ids))] = Team.objects.filter(pk__in=ids)
    return list(scopes.values())


def render_standard(*, presets=None, now=None, resource: str = "acc", force: bool = False) -> int:
    """Render the dashboard (for every audience) and every team's page for the standard ranges into the cache.
    Returns how many figure sets were built; those already there for the same window are kept unless `force`."""
    now = now or timezone.now()
    started, built = time.perf_counter(), 0
    teams = list(Team.objects.order_by("name"))
    for preset in presets or PRESETS:
        window = page_window(preset, now=now)
        jobs = [("dashboard", scope, None) for scope in _scopes()]
        jobs += [("team", Team.objects.filter(pk=team.pk), team) for team in teams]
        for kind, scope, team in jobs:
            key = figure_key(kind=kind, scope=scope_of(scope), window=window, resource=resource)
            if not force and cache.get(key) is not None:
                continue
            figures = build(window=window, teams=scope, types=None, resource=resource, team=team,
                            utilization=kind == "dashboard")  # fmt: skip
            cache.set(key, figures, TIMEOUT_SECONDS)
            built += 1
    log.info("usage figures: %s built in %.2f s", built, time.perf_counter() - started)
    return built
