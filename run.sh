#!/usr/bin/env bash
# Install and start the whole portal with demo data: web server, Celery worker, Celery beat, the admission
# scheduler and a broker.
# Needs only Python 3.11+. Ctrl-C stops everything. Settings come from the environment (see README).
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
PORT=${PORT:-8000}
mkdir -p var/log

if [ ! -x .venv/bin/python ]; then
  echo "==> creating the virtual environment in .venv"
  "$PY" -m venv .venv
fi
stamp=var/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "==> installing the portal and its dependencies"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e .
  touch "$stamp"
fi

# A plain-HTTP portal on this machine: production settings, a secret kept in var/, no HTTPS redirect.
if [ -z "${SECRET_KEY:-}" ]; then
  [ -s var/secret_key ] || .venv/bin/python -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret_key
  SECRET_KEY=$(cat var/secret_key)
fi
export SECRET_KEY DEBUG=${DEBUG:-false}
export SECURE_SSL_REDIRECT=${SECURE_SSL_REDIRECT:-false} SESSION_COOKIE_SECURE=${SESSION_COOKIE_SECURE:-false}
export CSRF_COOKIE_SECURE=${CSRF_COOKIE_SECURE:-false} SECURE_HSTS_SECONDS=${SECURE_HSTS_SECONDS:-0}
export DEMO_TRAFFIC=${DEMO_TRAFFIC:-true}
export ALLOWED_HOSTS=${ALLOWED_HOSTS:-localhost,127.0.0.1}

echo "==> preparing the database (${DATABASE_URL:-SQLite file var/portal.sqlite3})"
.venv/bin/python manage.py migrate --noinput -v0
.venv/bin/python manage.py collectstatic --noinput -v0
.venv/bin/python manage.py demo_load
if [ -n "${REDIS_URL:-}" ]; then broker="Redis at $REDIS_URL"; else broker="embedded file-system broker in var/broker"; fi

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo; echo "==> stopping"
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

.venv/bin/gunicorn portal.wsgi -b "127.0.0.1:$PORT" -w 2 --access-logfile var/log/web-access.log \
  --error-logfile var/log/web.log &
pids+=($!)
.venv/bin/celery -A portal worker -l info --concurrency 2 -n "worker@%h" >var/log/worker.log 2>&1 &
pids+=($!)
.venv/bin/celery -A portal beat -l info --schedule var/celerybeat-schedule >var/log/beat.log 2>&1 &
pids+=($!)
if [ "${ADMISSION_SCHEDULER:-process}" = process ]; then  # the warm admission scheduler (scheduling/warm.py)
  .venv/bin/python manage.py scheduler >var/log/scheduler.log 2>&1 &
  pids+=($!)
fi

sleep 2
cat <<MSG

  GPU quota portal is running at http://127.0.0.1:$PORT/
  Broker: $broker.  Logs: var/log/.  Ctrl-C stops web, worker, beat and scheduler.

  Demo logins (password demo-portal-2026):
    admin    admin: cluster, teams, allocations, policy
    manager  manager: usage and reports across teams
    sam      data scientist in llm-pretraining and research
    lin      data scientist in vision   (also: omar, rita, ivan, rosa)

MSG
wait -n "${pids[@]}"
echo "==> a process stopped; see var/log/"
