#!/usr/bin/env bash
# Run the whole test suite. Installs what it needs: the Python packages into .venv and, for the browser
# tests, Debian's chromium. The tests use PostgreSQL at 127.0.0.1:5432 (trust auth) and Redis at
# 127.0.0.1:6379 unless DATABASE_URL / REDIS_URL say otherwise. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.test-installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e ".[test]"
  touch "$stamp"
fi

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "==> installing Debian's chromium for the browser tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "the browser tests need /usr/bin/chromium: run 'sudo apt-get install chromium' once" >&2
    exit 1
  fi
fi

exec .venv/bin/python -m pytest "$@"
