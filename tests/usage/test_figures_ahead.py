"""The worker renders the usage figures ahead: after it ran, the first page view reads no usage data."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.usage import figures
from scheduling.usage.ranges import PRESETS

pytestmark = pytest.mark.django_db


def usage_queries(client, url) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in ctx.captured_queries if "usage_usage" in q["sql"] or "scheduling_job" in q["sql"]]


@pytest.fixture
def sampled(team_a, team_b, p5, add_sample):
    now = timezone.now()
    add_sample(team_a, p5, now.replace(second=0, microsecond=0), used_acc=6, quota_acc=8)
    return now


@pytest.mark.parametrize("preset", list(PRESETS))
def test_a_cold_page_view_after_the_worker_rendered_reads_no_usage_data(sampled, users, client_for, team_a, preset):
    assert figures.render_standard(presets=[preset]) >= 3  # the dashboard for everyone, and each team's page
    for role in ("manager", "scientist"):
        for url in (f"/usage/?range={preset}", f"/usage/teams/team-a/?range={preset}"):
            figures.render_standard(presets=[preset])  # the 24 h window moves every minute; so does the worker
            assert usage_queries(client_for(users[role]), url) == [], (role, url)


def test_without_the_worker_a_page_builds_its_figures_once(sampled, users, client_for):
    client = client_for(users["manager"])
    assert usage_queries(client, "/usage/?range=24h")  # built here
    assert usage_queries(client, "/usage/?range=24h") == []  # and kept


def test_rendering_again_for_the_same_window_builds_nothing(sampled):
    figures.render_standard(now=sampled)
    assert figures.render_standard(now=sampled) == 0
    assert figures.render_standard(now=sampled, presets=["7d"], force=True) > 0


def test_the_worker_renders_what_the_page_would_show(sampled, users, client_for):
    figures.render_standard(now=sampled, presets=["24h"])

    def body(html: bytes) -> bytes:  # the page around it carries a fresh CSRF token each time
        return html[html.index(b'id="usage-body"') :]

    ahead = body(client_for(users["manager"]).get("/usage/?range=24h").content)
    from django.core.cache import cache

    cache.clear()
    built_here = body(client_for(users["manager"]).get("/usage/?range=24h").content)
    assert ahead == built_here
