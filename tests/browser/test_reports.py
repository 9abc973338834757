"""A manager opens the reports, switches the range, sees the charts change, and downloads the CSV."""

import csv
import io
import random
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from quotas.models import ComputeAllocation, InstanceType, NodeGroup, Team
from scheduling.usage import services
from scheduling.usage.models import Granularity, UsageSample
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def history(team_a, team_b, p5):
    """40 days of samples every 10 minutes for four teams on two instance types, rolled up as the beat would."""
    from django.core.cache import cache

    cache.clear()  # pages cache their figures for a minute
    g5 = InstanceType.objects.create(
        name="ml.g5.2xlarge",
        family="g5",
        accelerator_kind="NVIDIA A10G",
        accelerator_resource="gpu",
        accelerators=1,
        vcpus=8,
        memory_gib=32,
    )
    NodeGroup.objects.create(name="g5-nodes", instance_type=g5, node_count=16)
    NodeGroup.objects.filter(instance_type=p5).update(node_count=4)
    teams = [team_a, team_b]
    for name in ("vision", "speech"):
        team = Team.objects.create(name=name, namespace=f"ns-{name}")
        ComputeAllocation.objects.create(team=team, instance_type=g5, accelerators=8)
        teams.append(team)
    rng = random.Random(7)
    now = timezone.now().replace(second=0, microsecond=0)
    start = now - timedelta(days=40)
    rows = []
    for step in range(40 * 144 + 1):  # up to now: today has a sample even in its first ten minutes
        at = start + timedelta(minutes=10 * step)
        wave = 0.5 + 0.5 * abs(((at.hour + 6) % 24) - 12) / 12  # busier by day
        for i, team in enumerate(teams):
            it, quota = (p5, (8, 4)[i]) if i < 2 else (g5, 8)
            used = round(min(quota * 1.6, quota * wave * rng.uniform(0.6, 1.3) + (step // 1000) * i % 3))
            rows.append(
                UsageSample(
                    at=at,
                    team=team,
                    instance_type=it,
                    seconds=600,
                    used_acc=used,
                    borrowed_acc=max(used - quota, 0),
                    quota_acc=quota,
                    fair_share_acc=quota,
                    used_cpu=used * 12,
                    quota_cpu=quota * 24,
                    pending_acc=rng.choice((0, 0, 2, 4)),
                    pending_jobs=rng.choice((0, 1)),
                )
            )
    UsageSample.objects.bulk_create(rows, batch_size=5000)
    services.usage_rollup(granularity=Granularity.HOUR, start=start, end=now + timedelta(hours=1))
    services.usage_rollup(granularity=Granularity.DAY, start=start, end=now + timedelta(days=1))


def chart_points(page, chart_id):
    return page.evaluate(f"document.getElementById('{chart_id}').data.map(t => t.x.length)")


def test_manager_reads_reports_switches_range_and_downloads_csv(users, history, login, page, live_server):
    login("maya")
    page.goto(f"{live_server.url}/reports/")
    assert page.locator("h1").inner_text() == "Usage reports"
    stories = page.get_by_test_id("stories")
    assert "GPU-hours" in stories.inner_text() and "borrowed" in stories.inner_text()
    thirty_days = page.get_by_test_id("team-totals").inner_text()
    screenshot(page, "reports-30d")

    page.get_by_test_id("range-7d").click()
    page.wait_for_url("**range=7d**")
    page.wait_for_function("() => document.querySelector('[data-testid=window]').innerText.length > 0")
    assert page.get_by_test_id("team-totals").inner_text() != thirty_days
    screenshot(page, "reports-7d")

    with page.expect_download() as download_info:
        page.get_by_test_id("summary-csv").click()
    download = download_info.value
    assert download.suggested_filename.startswith("usage-summary-") and download.suggested_filename.endswith(".csv")
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))
    assert {r["team"] for r in rows} == {"team-a", "team-b", "vision", "speech"}
    assert len({r["day"] for r in rows}) == 8  # seven days back from now touch eight calendar days

    # The dashboard: 7 days of hourly points, then 24 h of raw samples after a click.
    page.goto(f"{live_server.url}/usage/")
    page.wait_for_function("() => document.getElementById('chart-usage-gpu').dataset.drawn")
    week = chart_points(page, "chart-usage-gpu")
    screenshot(page, "usage-7d")
    page.get_by_test_id("range-24h").click()
    page.wait_for_url("**range=24h**")
    page.wait_for_function(
        # a function, not an expression: Playwright would eval() an expression, which the CSP forbids
        f"() => {{ const el = document.getElementById('chart-usage-gpu'); "
        f"return el.data && el.data[0].x.length !== {week[0]}; }}"
    )
    day = chart_points(page, "chart-usage-gpu")
    assert 140 <= day[0] <= 146 and 160 <= week[0] <= 170  # every 10-minute sample vs hourly averages
    assert page.locator("#chart-usage-gpu .modebar-btn[data-title='Download plot as a PNG']").count() == 1
    screenshot(page, "usage-24h")

    page.goto(f"{live_server.url}/usage/teams/team-a/?range=30d")
    page.wait_for_function("() => document.getElementById('chart-usage-gpu').dataset.drawn")
    names = page.evaluate("document.getElementById('chart-usage-gpu').data.map(t => t.name)")
    assert names == ["within quota", "borrowed", "quota", "lent to others", "fair share"]
    screenshot(page, "usage-team-a-30d")


def test_admin_adds_an_alert_rule_and_reads_the_history(users, team_a, login, page, live_server):
    from scheduling.usage.models import AlertDelivery, AlertEvent, AlertKind, AlertRule

    rule = AlertRule.objects.create(team=team_a, kind=AlertKind.PENDING_TOO_LONG, minutes=30, emails="ops@example.com")
    event = AlertEvent.objects.create(rule=rule, team=team_a, message="job train (#12) of team-a has waited 45 min")
    AlertDelivery.objects.create(event=event, transition="fired", channel="email", target="ops@example.com",
                                 status="sent", attempts=1)  # fmt: skip
    login("ada")
    page.goto(f"{live_server.url}/alerts/")
    assert "has waited 45 min" in page.get_by_test_id("active-alerts").inner_text()
    page.select_option("select[name=team]", label="team-a")
    page.select_option("select[name=kind]", value="usage_above_quota")
    page.fill("input[name=threshold_pct]", "120")
    page.fill("input[name=minutes]", "15")
    page.fill("input[name=webhook_url]", "https://hooks.example.com/gpu")
    page.click("text=Add rule")
    page.wait_for_selector("text=Alert rule added")
    assert "usage above 120% of quota for 15 min" in page.get_by_test_id("rules").inner_text()
    screenshot(page, "alerts-admin")
