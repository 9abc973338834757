"""Readiness: can this portal do its job right now? The database answers, the broker answers, and an
admission pass has run within the last minute (the scheduler process, or beat's runs in celery mode)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import JsonResponse
from django.utils import timezone

SCHEDULER_STALE_AFTER = timedelta(seconds=60)


def readiness() -> tuple[bool, dict[str, str]]:
    """(ready, what each check found), each check in a sentence an operator can act on."""
    checks: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:
        checks["database"] = f"unreachable: {type(exc).__name__}"
        return False, checks | {"scheduler": "unknown (no database)"}
    checks["broker"] = _broker()
    checks["scheduler"] = _scheduler()
    return all(v == "ok" for v in checks.values()), checks


def _broker() -> str:
    if not settings.REDIS_URL:
        return "ok"  # the embedded file-system broker lives on this host's disk
    import redis

    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2, retry=None)
        with client:
            client.ping()
        return "ok"
    except Exception as exc:
        return f"Redis unreachable: {type(exc).__name__}"


def _scheduler() -> str:
    from scheduling.models import AdmissionRun

    last = AdmissionRun.objects.order_by("-started_at").values_list("started_at", flat=True).first()
    if last is None:
        return "no admission pass has run yet: is `manage.py scheduler` running?"
    age = timezone.now() - last
    if age > SCHEDULER_STALE_AFTER:
        return f"no admission pass for {age.total_seconds():.0f} s: is `manage.py scheduler` running?"
    return "ok"


@login_not_required
def readyz(request):
    """503 until the database, the broker and the scheduler all work: the load balancer's readiness probe."""
    ready, checks = readiness()
    return JsonResponse({"status": "ready" if ready else "not ready", **checks}, status=200 if ready else 503)
