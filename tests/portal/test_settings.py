"""Settings come from the environment; production mode fails fast and passes Django's deploy checks."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_manage(*args, env_overrides):
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_production_without_secret_stops_checks_with_a_clear_message(tmp_path):
    result = run_manage("check", env_overrides={"DEBUG": "false", "PORTAL_VAR_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "(portal.E001) SECRET_KEY is not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_production_web_server_without_secret_refuses_to_start_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update({"DEBUG": "false", "PORTAL_VAR_DIR": str(tmp_path)})
    result = subprocess.run(
        [sys.executable, "-c", "import portal.wsgi"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "configuration error: SECRET_KEY is not set. Production mode (DEBUG off) needs a secret: export "
        "SECRET_KEY=<50+ random characters>, or set DEBUG=true for local development."
    ]


def test_simulate_needs_no_secret(tmp_path):
    scenario = tmp_path / "s.json"
    scenario.write_text('{"teams": [], "workloads": []}')
    result = run_manage("simulate", str(scenario), env_overrides={"DEBUG": "false", "PORTAL_VAR_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr


def test_check_deploy_reports_nothing_in_production_mode(tmp_path):
    secret = "k" * 10 + "-Zq8#pL2vW9xR4tY7uI0oP3aS6dF1gH5jK8lM2nB4vC7xZ0"
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "DEBUG",
        env_overrides={
            "DEBUG": "false",
            "SECRET_KEY": secret,
            "PORTAL_VAR_DIR": str(tmp_path),
            "SECURE_SSL_REDIRECT": "true",
            "SESSION_COOKIE_SECURE": "true",
            "CSRF_COOKIE_SECURE": "true",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_database_url_selects_the_database(settings):
    # The test run itself is configured by DATABASE_URL (PostgreSQL unless pointed elsewhere).
    assert settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def test_sqlite_is_the_embedded_default(tmp_path):
    code = (
        "from django.conf import settings; print(settings.DATABASES['default']['ENGINE'], settings.CELERY_BROKER_URL)"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"}}
    env.update({"DEBUG": "true", "PORTAL_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "portal.settings"})
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); " + code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "filesystem://"]
