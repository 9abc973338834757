"""The services the portal depends on (database, cache, task broker): which failure is whose, in one line,
and how each is doing now. Used by the 503 page, /healthz and manage.py's one-line errors."""

from __future__ import annotations

import time
from datetime import timedelta

from django.db import DatabaseError, InterfaceError, OperationalError


def _redis_errors() -> tuple[type[BaseException], ...]:
    try:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError
    except ImportError:  # pragma: no cover - redis is a dependency
        return ()
    return (RedisConnectionError, RedisTimeoutError)


def _broker_errors() -> tuple[type[BaseException], ...]:
    try:
        from kombu.exceptions import OperationalError as KombuOperationalError
    except ImportError:  # pragma: no cover - kombu comes with Celery
        return ()
    return (KombuOperationalError,)


def unavailable(exc: BaseException) -> str | None:
    """If `exc` means a dependency is down, say which in words; else None (a bug, not an outage)."""
    if isinstance(exc, OperationalError | InterfaceError) and _looks_like_connection(exc):
        return "the database is unreachable"
    if isinstance(exc, _redis_errors()):
        return "the cache (Redis) is unreachable"
    if isinstance(exc, _broker_errors()):
        return "the task broker is unreachable"
    return None


def _looks_like_connection(exc: DatabaseError) -> bool:
    text = str(exc).lower()
    words = ("connect", "connection", "server closed", "could not translate host", "timeout", "terminating")
    return isinstance(exc, InterfaceError) or any(w in text for w in words)


def one_line(exc: BaseException) -> str:
    """'the database is unreachable: connection refused (127.0.0.1:5432)' - the reason and the error's first line."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), exc.__class__.__name__)
    first = first if len(first) <= 160 else first[:157] + "..."
    reason = unavailable(exc)
    return f"{reason}: {first}" if reason else f"{exc.__class__.__name__}: {first}"


# --- /healthz ---------------------------------------------------------------------------------------------


def _timed(check) -> dict:
    started = time.monotonic()
    try:
        detail = check()
        ok = True
    except SchedulerLate as exc:
        detail, ok = str(exc), False
    except Exception as exc:  # reported, never raised; unauthenticated, so the reason only (no host, no user)
        detail, ok = unavailable(exc) or f"failed ({exc.__class__.__name__})", False
    result = {"ok": ok, "ms": round((time.monotonic() - started) * 1000, 1)}
    if detail:
        result["detail"] = detail
    return result


def _database() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return ""


def _broker() -> str:
    from django.conf import settings
    from kombu import Connection

    with Connection(settings.CELERY_BROKER_URL, transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS) as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=2)
    return ""


def _cache() -> str:
    from django.core.cache import cache

    cache.get("healthz")
    return ""


class SchedulerLate(RuntimeError):
    """The admission loop is not running as it should (our words, safe to show)."""


def _scheduler() -> str:
    """The admission loop's last run must be recent and must have succeeded."""
    from django.conf import settings
    from django.utils import timezone

    from scheduling.models import AdmissionRun

    last = AdmissionRun.objects.order_by("-started_at").first()
    if last is None:
        raise SchedulerLate("the admission loop has not run yet")
    age = timezone.now() - last.started_at
    allowed = max(timedelta(minutes=1), settings.ADMISSION_INTERVAL * 6)
    if age > allowed:
        raise SchedulerLate(f"the admission loop last ran {int(age.total_seconds())} s ago")
    if last.error:
        raise SchedulerLate("the admission loop's last run failed")
    return f"last run {int(age.total_seconds())} s ago, {last.duration_ms or 0:.0f} ms"


def health() -> dict:
    """Each dependency on its own (no secrets: no URLs, no stack traces)."""
    checks = {"database": _timed(_database), "broker": _timed(_broker), "cache": _timed(_cache)}
    checks["scheduler"] = (
        _timed(_scheduler) if checks["database"]["ok"] else {"ok": False, "detail": "needs the database"}
    )
    return {"status": "ok" if all(c["ok"] for c in checks.values()) else "unavailable", "checks": checks}
