"""Errors say what is wrong in the reader's words: a 400 never names a database constraint, a command
prints one line, and a missing dependency is a 503 page with the reason."""

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.test import Client, override_settings
from django.utils import timezone

from quotas.models import ComputeAllocation
from scheduling.models import AdmissionRun

pytestmark = pytest.mark.django_db

CONSTRAINTS = ("allocation_is_instances_or_resources", "one_allocation_per_team_and_type", "Constraint “")


def test_a_400_never_names_a_constraint(admin_user, api_for, team_a):
    alloc = ComputeAllocation.objects.get(team=team_a)
    api = api_for(admin_user)
    response = api.put(f"/api/allocations/{alloc.pk}/", {"instances": 1, "vcpus": 8}, format="json")
    assert response.status_code == 400
    assert not any(name in response.content.decode() for name in CONSTRAINTS), response.content
    response = api.post(
        "/api/allocations/", {"team": team_a.name, "instance_type": "ml.p5.48xlarge", "vcpus": 8}, format="json"
    )
    assert response.status_code == 400
    assert not any(name in response.content.decode() for name in CONSTRAINTS), response.content


def test_simulate_on_a_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "scenario.json"
    path.write_bytes(b'\xff\xfe{"teams": []}')
    with pytest.raises(CommandError) as caught:
        call_command("simulate", str(path))
    assert "not UTF-8" in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.returncode == 2


UNREACHABLE_REDIS = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",
        "OPTIONS": {"socket_connect_timeout": 0.5},
    }
}


@pytest.mark.parametrize("url", ["/usage/", "/reports/", "/api/usage/series/"])
def test_redis_unreachable_is_a_503_with_the_reason(manager_user, url):
    client = Client(raise_request_exception=False)
    client.force_login(manager_user)
    with override_settings(CACHES=UNREACHABLE_REDIS):
        response = client.get(url)
    assert response.status_code == 503
    assert response["Retry-After"]
    assert "the cache (Redis) is unreachable" in response.content.decode()


def test_a_database_outage_in_a_view_is_a_503_page(admin_user, monkeypatch):
    import portal.views

    def broken(*args, **kwargs):
        raise OperationalError('connection to server at "db", port 5432 failed: Connection refused')

    monkeypatch.setattr(portal.views.home_selectors, "admin_home", broken)
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    response = client.get("/")
    assert response.status_code == 503 and "the database is unreachable" in response.content.decode()


def _with_database_down(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": "postgres://postgres@127.0.0.1:1/nowhere"}
    return subprocess.run([sys.executable, *code], capture_output=True, text=True, env=env, timeout=60)


def test_database_unreachable_pages_are_503_and_commands_print_one_line():
    script = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'portal.settings'); django.setup();"
        "from django.test import Client; c = Client(raise_request_exception=False);"
        "r = c.post('/login/', {'username': 'ada', 'password': 'x'});"
        "print(r.status_code, r.content.decode().count('the database is unreachable'))"
    )
    page = _with_database_down(["-c", script])
    assert page.stdout.split() == ["503", "1"], page.stderr[-2000:]
    command = _with_database_down(["manage.py", "jobs", "list", "--user", "admin"])
    assert command.returncode == 1
    lines = command.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the database is unreachable"), command.stderr


def test_healthz_reports_each_dependency(client):
    AdmissionRun.objects.create(duration_ms=12)
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "broker", "cache", "scheduler"}
    assert all(check["ok"] for check in body["checks"].values())


def test_healthz_is_503_when_the_scheduler_is_late_or_failing(client):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["scheduler"]["detail"] == "the admission loop has not run yet"
    AdmissionRun.objects.create(started_at=timezone.now() - timedelta(hours=1))
    assert "last ran" in client.get("/healthz").json()["checks"]["scheduler"]["detail"]
    AdmissionRun.objects.create(error="boom")
    assert client.get("/healthz").json()["checks"]["scheduler"]["detail"] == "the admission loop's last run failed"


def test_healthz_names_a_broken_cache_without_secrets(client):
    AdmissionRun.objects.create()
    with override_settings(CACHES=UNREACHABLE_REDIS):
        response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["cache"] == {
        "ok": False,
        "ms": body["checks"]["cache"]["ms"],
        "detail": "the cache (Redis) is unreachable",
    }
    assert body["checks"]["database"]["ok"] and body["checks"]["scheduler"]["ok"]
    assert "redis://" not in response.content.decode() and "127.0.0.1" not in response.content.decode()
