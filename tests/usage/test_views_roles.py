"""Every usage page and API endpoint for every role, from one table of cases."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.usage.models import AlertKind, AlertRule

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "other", "scientist", "manager", "admin"]
# path -> expected status for anonymous, scientist of another team, scientist of team-a, manager, admin
PAGES = {
    "/usage/": (302, 200, 200, 200, 200),
    "/usage/?range=24h&resource=cpu": (302, 200, 200, 200, 200),
    "/usage/teams/team-a/": (302, 404, 200, 200, 200),
    "/usage/teams/team-a/?range=90d": (302, 404, 200, 200, 200),
    "/reports/": (302, 200, 200, 200, 200),
    "/reports/?range=90d&team=team-a": (302, 200, 200, 200, 200),  # a form error for other teams
    "/reports/summary.csv": (302, 200, 200, 200, 200),
    "/reports/jobs/": (302, 200, 200, 200, 200),
    "/reports/jobs.csv?team=team-a": (302, 400, 200, 200, 200),
    "/reports/top-jobs/": (302, 200, 200, 200, 200),
    "/reports/top-jobs/?team=team-a&range=90d": (302, 200, 200, 200, 200),  # a form error for other teams
    "/reports/top-jobs.csv?team=team-a": (302, 400, 200, 200, 200),
    "/alerts/": (302, 403, 403, 200, 200),
    "/alerts/rules/{rule}/": (302, 403, 403, 403, 200),
    "/api/usage/summary/": (401, 200, 200, 200, 200),
    "/api/usage/jobs/?team=team-a": (401, 400, 200, 200, 200),
    "/api/usage/series/?range=24h": (401, 200, 200, 200, 200),
    "/api/alert-rules/": (401, 403, 403, 200, 200),
    "/api/alert-rules/{rule}/": (401, 403, 403, 200, 200),
    "/api/alert-events/": (401, 403, 403, 200, 200),
}


@pytest.fixture
def rule(team_a):
    return AlertRule.objects.create(team=team_a, kind=AlertKind.PENDING_TOO_LONG, minutes=30, emails="a@example.com")


@pytest.fixture
def everyone(users):
    return {"anonymous": None, **users}


def client(role, everyone, client_for, api_for, path):
    return (api_for if path.startswith("/api/") else client_for)(everyone[role])


@pytest.mark.parametrize("path", list(PAGES))
def test_every_page_for_every_role(path, everyone, rule, client_for, api_for):
    url = path.format(rule=rule.pk)
    for role, expected in zip(ROLES, PAGES[path], strict=True):
        response = client(role, everyone, client_for, api_for, path).get(url)
        assert response.status_code == expected, f"{role} GET {url}"


WRITES = [
    # method, path, data, expected per role
    (
        "post",
        "/alerts/",
        {
            "team": "{team}",
            "kind": "usage_above_quota",
            "threshold_pct": 90,
            "minutes": 30,
            "emails": "ops@example.com",
            "enabled": "on",
        },
        (302, 403, 403, 403, 302),
    ),
    ("post", "/alerts/rules/{rule}/delete/", {}, (302, 403, 403, 403, 302)),
    (
        "post",
        "/api/alert-rules/",
        {"team": "team-a", "kind": "quota_idle", "threshold_pct": 20, "webhook_url": "http://127.0.0.1:9/hook"},
        (401, 403, 403, 403, 201),
    ),
    ("patch", "/api/alert-rules/{rule}/", {"enabled": False}, (401, 403, 403, 403, 200)),
    ("delete", "/api/alert-rules/{rule}/", None, (401, 403, 403, 403, 204)),
]


@pytest.mark.parametrize("method, path, data, expected", WRITES, ids=[f"{w[0]} {w[1]}" for w in WRITES])
def test_only_admins_change_alert_rules(method, path, data, expected, everyone, team_a, client_for, api_for):
    for role, status in zip(ROLES, expected, strict=True):
        rule = AlertRule.objects.create(team=team_a, kind=AlertKind.PENDING_TOO_LONG, minutes=5, emails="x@example.com")
        url = path.format(rule=rule.pk)
        body = {k: (v.format(team=team_a.pk) if isinstance(v, str) else v) for k, v in (data or {}).items()}
        c = client(role, everyone, client_for, api_for, path)
        kwargs = {"format": "json"} if path.startswith("/api/") else {}
        response = getattr(c, method)(url, body, **kwargs) if data is not None else getattr(c, method)(url)
        assert response.status_code == status, f"{role} {method} {url}: {response.content[:300]}"


def test_alert_form_errors_are_shown_not_saved(admin_user, team_a, client_for, api_for):
    response = client_for(admin_user).post(
        "/alerts/", {"team": team_a.pk, "kind": "usage_above_quota", "minutes": 5, "emails": "not-an-address"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "is not an email address" in page
    api = api_for(admin_user).post(
        "/api/alert-rules/", {"team": "team-a", "kind": "usage_above_quota", "emails": "a@example.com"}, format="json"
    )
    assert api.status_code == 400 and "needs a percentage" in str(api.json())
    assert not AlertRule.objects.exists()


def test_scientist_sees_only_their_teams_on_the_dashboard(users, client_for, team_a, team_b, p5, add_sample):
    now = timezone.now()
    add_sample(team_a, p5, now - timedelta(minutes=5), used_acc=3, quota_acc=8)
    add_sample(team_b, p5, now - timedelta(minutes=5), used_acc=1, quota_acc=4)
    page = client_for(users["scientist"]).get("/usage/?range=24h").content.decode()
    assert '"team-a"' in page and '"team-b"' not in page
    page = client_for(users["manager"]).get("/usage/?range=24h").content.decode()
    assert '"team-a"' in page and '"team-b"' in page


def test_dashboard_carries_its_figures_as_json(users, client_for, team_a, p5, add_sample):
    add_sample(team_a, p5, timezone.now() - timedelta(minutes=5), used_acc=3, quota_acc=8)
    response = client_for(users["manager"]).get("/usage/?range=24h")
    figures = {name: json.loads(fig) for name, fig in response.context["figures"].items()}
    assert list(figures) == ["utilization", "pending", "preemptions"]
    [gpus] = response.context["facets"]  # the test cluster has GPUs only: one usage chart
    usage = json.loads(gpus["figure"])
    assert usage["data"][0]["name"] == "team-a" and usage["data"][0]["y"] == [3]
    assert figures["pending"]["data"][0]["name"] == "pending GPUs"
    html = response.content.decode()
    embedded = html.split('<script id="fig-usage-gpu" type="application/json">')[1].split("</script>")[0]
    assert json.loads(embedded) == usage


def test_htmx_gets_only_the_body(users, client_for):
    response = client_for(users["manager"]).get("/reports/?range=7d", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="usage-body"') and "<html" not in html


def test_busy_pages_have_a_fixed_query_budget(
    users, client_for, team_a, team_b, p5, add_sample, add_day, django_assert_max_num_queries
):
    now = timezone.now()
    for m in range(30):
        add_sample(team_a, p5, now - timedelta(minutes=m), used_acc=3, quota_acc=8)
        add_sample(team_b, p5, now - timedelta(minutes=m), used_acc=1, quota_acc=4)
    for d in range(30):
        add_day(team_a, p5, now - timedelta(days=d), acc_hours=10, quota_hours=192)
    c = client_for(users["manager"])
    with django_assert_max_num_queries(16):  # +2: the "now" tiles read the latest sample
        assert c.get("/usage/?range=24h").status_code == 200
    with django_assert_max_num_queries(10):
        assert c.get("/reports/?range=30d").status_code == 200
