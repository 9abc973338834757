"""The navigation shows exactly the pages a role may open; a refusal is a page in the site's layout with the
reason, and one log line without a traceback."""

import logging

import pytest
from django.urls import reverse

from portal.navigation import ENTRIES

pytestmark = pytest.mark.django_db

EXPECTED = {
    "admin": ["Home", "Jobs", "Submit", "Teams", "Usage", "Reports", "Requests", "What-if", "Alerts", "Cluster",
              "Policy", "Loop", "Kubernetes"],
    "manager": ["Home", "Jobs", "Teams", "Usage", "Reports", "Requests", "What-if", "Alerts", "Cluster", "Policy",
                "Kubernetes"],
    "scientist": ["Home", "Jobs", "Submit", "Teams", "Usage", "Reports", "Requests", "Cluster", "Policy"],
}  # fmt: skip


@pytest.mark.parametrize("role", ["admin", "manager", "scientist"])
def test_navigation_is_exactly_what_the_role_may_open(users, client_for, role):
    client = client_for(users[role])
    nav = client.get("/").context["nav"]
    assert [e["label"] for e in nav] == EXPECTED[role]
    shown = {e["name"] for e in nav}
    for _, name, _ in ENTRIES:
        status = client.get(reverse(name)).status_code
        if name in shown:
            assert status == 200, (role, name, status)
        else:
            assert status == 403, (role, name, status)


def test_scientists_read_usage_and_reports_of_their_teams_only(users, client_for):
    client = client_for(users["scientist"])
    page = client.get("/usage/").content.decode()
    assert 'value="team-a"' in page and 'value="team-b"' not in page
    assert client.get("/usage/teams/team-b/").status_code == 404
    assert client.get("/reports/?team=team-b").status_code == 200  # an unknown choice: the form says so
    assert "team-b" not in client.get("/reports/").content.decode()


@pytest.mark.parametrize(
    "role, url, reason",
    [
        ("manager", "/jobs/submit/", "Managers read jobs; data scientists and admins submit them."),
        ("scientist", "/alerts/", "Alerts are set by admins and read by managers."),
        ("scientist", "/admission-runs/", "Only admins see the admission loop"),
    ],
)
def test_a_refusal_is_a_page_with_the_reason_and_one_log_line(users, client_for, role, url, reason, caplog):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client_for(users[role]).get(url)
    assert response.status_code == 403
    page = response.content.decode()
    assert reason.replace("'", "&#x27;") in page
    assert "<h1>You may not open this page</h1>" in page and 'class="mainnav"' in page  # the site's layout
    records = [r for r in caplog.records if r.name == "django.request"]
    assert len(records) == 1 and records[0].exc_info is None and records[0].exc_text is None
    assert url in records[0].getMessage() and reason.split(";")[0] in records[0].getMessage()


def test_the_embedded_broker_keeps_its_files_under_var(tmp_path):
    """Settings as ./run.sh has them without REDIS_URL (read in a fresh process: settings load once)."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")}
    code = "from django.conf import settings; import json; print(json.dumps(settings.CELERY_BROKER_TRANSPORT_OPTIONS))"
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env={**env, "DJANGO_SETTINGS_MODULE": "portal.settings"},
        capture_output=True,
        text=True,
        check=True,
    )
    options = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        assert "/var/broker/" in options[key], key
