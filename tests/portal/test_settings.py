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


def test_production_without_secret_stops_with_one_clear_line(tmp_path):
    result = run_manage("check", env_overrides={"DEBUG": "false", "PORTAL_VAR_DIR": str(tmp_path)})
    assert result.returncode != 0
    lines = [line for line in result.stderr.strip().splitlines() if line]
    assert len(lines) == 1, result.stderr
    assert "SECRET_KEY is not set" in lines[0]
    assert "Traceback" not in result.stderr


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
