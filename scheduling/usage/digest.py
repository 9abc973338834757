"""The usage digest: a user's teams' usage against quota over the last day or week, e-mailed with the chart
as a PNG (rendered by plotly's static export driving a local Chromium) and the summary CSV attached."""

from __future__ import annotations

import csv
import io
import logging
import os
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone

from quotas.models import Role, Team, User
from scheduling.usage import charts, selectors
from scheduling.usage.models import DigestFrequency, DigestSubscription
from scheduling.usage.ranges import Window

log = logging.getLogger(__name__)

PERIOD = {DigestFrequency.DAILY: timedelta(days=1), DigestFrequency.WEEKLY: timedelta(days=7)}
CHART_SIZE = (1000, 420)
BROWSERS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
NO_BROWSER = "The chart is missing: this server has no Chromium to draw it with (install Debian's chromium)."


@dataclass
class Digest:
    subject: str
    body: str
    png: bytes | None
    csv_text: str
    csv_name: str


def browser_path() -> str | None:
    """The Chromium that plotly's static export (kaleido) drives: BROWSER_PATH, else a system one."""
    given = os.environ.get("BROWSER_PATH")
    if given:
        return given if Path(given).exists() else None
    for path in BROWSERS:
        if Path(path).exists():
            return path
    found = shutil.which("chromium")
    return found


def chart_png(fig) -> bytes | None:
    """The figure as PNG, or None where no browser can render it (the digest then says so in one line)."""
    path = browser_path()
    if path is None:
        return None
    os.environ.setdefault("BROWSER_PATH", path)
    logging.getLogger("choreographer").setLevel(logging.WARNING)  # it logs every temporary directory it removes
    import plotly.io as pio

    width, height = CHART_SIZE
    try:
        return pio.to_image(fig, format="png", width=width, height=height)
    except Exception as exc:  # kaleido's errors have no common base; any failure means: no picture this time
        log.warning("digest chart not rendered: %s", exc)
        return None


def teams_of(user) -> tuple[object, str]:
    """The teams a digest covers (None: all of them) and how to name them."""
    if user.sees_all_teams:
        return None, "all teams"
    teams = Team.objects.visible_to(user).order_by("name")
    return teams, ", ".join(teams.values_list("name", flat=True))


def _chart(window: Window, teams, names: str):
    """The usage chart of the first accelerator resource the teams use or hold (GPUs and Neuron devices are never
    added together; the page draws one chart per resource, an e-mail carries one picture)."""
    facets = selectors.resource_facets(None, "acc") or [("acc", "Accelerators", None)]

    def read(types):
        if teams is None:
            return selectors.usage_overview(window=window, teams=None, types=types)
        return selectors.team_series(window=window, teams=teams, types=types), None

    read_facets = ((facet, *read(facet[2])) for facet in facets)
    (_, label, types), series, by_team = next(
        (f for f in read_facets if any(f[1]["used"]) or any(f[1]["quota"])), None
    ) or ((facets[0], *read(facets[0][2])))
    if teams is None:
        capacity = sum(selectors.capacity_by_type(types).values())
        return charts.teams_stack_figure(by_team, unit_label=label, capacity=capacity, borrowed=series)
    return charts.team_usage_figure(series, unit_label=label, title=f"{names}: {label} against quota")


def digest_build(*, user, frequency: str, now: datetime | None = None) -> Digest | None:
    """The digest for one user over the last day or week; None if the user is in no team."""
    now = now or timezone.now()
    teams, names = teams_of(user)
    if teams is not None and not teams.exists():
        return None
    span = PERIOD[frequency]
    window = Window(start=now - span, end=now, step="raw" if span <= timedelta(days=2) else "hour", preset="digest")
    rows = selectors.usage_summary(window=window, teams=teams, types=None, by_day=True)
    totals = selectors.team_totals(rows)
    fig = _chart(window, teams, names)
    fig.update_xaxes(range=[window.start.isoformat(), window.end.isoformat()])
    png = chart_png(fig)

    period = "day" if frequency == DigestFrequency.DAILY else "week"
    until = f"{timezone.localtime(now):%d %b %Y %H:%M}"
    lines = [f"Hello {user.get_full_name() or user.username},", ""]
    lines += [f"GPU and Neuron usage against quota for {names}, the {period} to {until}:", ""]
    for t in totals:
        shown = t["shown"]
        line = f"- {t['team']}: {shown['used']} {t['unit']}, {shown['within']} from its quota, "
        line += f"{shown['borrowed']} borrowed"
        if t["utilization_pct"] is not None:
            line += f"; {t['utilization_pct']:g} % of its quota used, {t['idle']:.0f} quota hours idle"
        line += f"; {t['jobs']} jobs started, {t['preemptions']} preemptions."
        lines.append(line)
    if not totals:
        lines.append("- no usage recorded in this period.")
    if teams is None:  # managers and admins: the latest right-sizing advice, each with its evidence page
        lines += _advice_lines()
    lines += ["", "The chart is attached as usage.png." if png else NO_BROWSER, "The daily summary is attached as CSV."]
    lines += ["", f"Change how often this comes on your profile page. {settings.DEFAULT_FROM_EMAIL}"]

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(selectors.SUMMARY_FIELDS)
    for row in rows:
        writer.writerow(["" if row[f] is None else row[f] for f in selectors.SUMMARY_FIELDS])
    return Digest(
        subject=f"GPU usage {'today' if period == 'day' else 'this week'}: {names}",
        body="\n".join(lines),
        png=png,
        csv_text=out.getvalue(),
        csv_name=f"usage-summary-{timezone.localtime(now):%Y%m%d}.csv",
    )


def _advice_lines() -> list[str]:
    from scheduling.whatif.models import Advice

    latest = Advice.objects.order_by("-batch").values_list("batch", flat=True).first()
    if latest is None:
        return []
    advice = list(Advice.objects.filter(batch=latest).select_related("team", "instance_type")[:10])
    lines = ["", f"Right-sizing advice from the weekly reading of usage ({timezone.localtime(latest):%d %b}):"]
    lines += [f"- {a.summary}" for a in advice]
    return lines + ["Each opens a what-if replay of itself on the portal's advice page (/whatif/advice/)."]


def digest_send(*, subscription: DigestSubscription, now: datetime | None = None) -> bool:
    now = now or timezone.now()
    user = subscription.user
    digest = digest_build(user=user, frequency=subscription.frequency, now=now) if user.email else None
    if digest is not None:
        message = EmailMessage(digest.subject, digest.body, settings.DEFAULT_FROM_EMAIL, [user.email])
        if digest.png:
            message.attach("usage.png", digest.png, "image/png")
        message.attach(digest.csv_name, digest.csv_text, "text/csv")
        message.send()
    DigestSubscription.objects.filter(pk=subscription.pk).update(last_sent_at=now)
    return digest is not None


def digests_due(now: datetime) -> list[DigestSubscription]:
    """Subscriptions whose period has passed since the last digest (managers and team members only)."""
    due = []
    subscriptions = DigestSubscription.objects.exclude(frequency=DigestFrequency.OFF).select_related("user")
    for sub in subscriptions.filter(user__is_active=True):
        if sub.user.role not in (Role.MANAGER, Role.SCIENTIST, Role.ADMIN):
            continue
        if sub.last_sent_at is None or now - sub.last_sent_at >= PERIOD[sub.frequency] - timedelta(minutes=5):
            due.append(sub)
    return due


def digests_send_due(*, now: datetime | None = None) -> int:
    now = now or timezone.now()
    sent = 0
    for sub in digests_due(now):
        sent += digest_send(subscription=sub, now=now)
    return sent


@transaction.atomic
def digest_subscribe(*, user: User, frequency: str) -> DigestSubscription:
    if frequency not in DigestFrequency.values:
        raise ValueError(f"unknown digest frequency {frequency!r}")
    sub, _ = DigestSubscription.objects.select_for_update().get_or_create(user=user)
    sub.frequency = frequency
    sub.full_clean()
    sub.save(update_fields=["frequency"])
    return sub
