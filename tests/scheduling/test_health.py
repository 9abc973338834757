"""/readyz: ready only while the database, the broker and the scheduler all work."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.models import AdmissionRun

pytestmark = pytest.mark.django_db


def test_not_ready_before_any_admission_pass(client):
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["database"] == "ok" and "manage.py scheduler" in response.json()["scheduler"]


def test_ready_while_the_scheduler_runs_and_not_after_a_silent_minute(client):
    AdmissionRun.objects.create(started_at=timezone.now() - timedelta(seconds=5), trigger="warm:idle")
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json() == {"status": "ready", "database": "ok", "broker": "ok", "scheduler": "ok"}
    AdmissionRun.objects.update(started_at=timezone.now() - timedelta(seconds=61))
    response = client.get("/readyz")
    assert response.status_code == 503 and "no admission pass for 61 s" in response.json()["scheduler"]


def test_a_broker_that_does_not_answer_makes_it_unready(client, settings):
    AdmissionRun.objects.create(trigger="warm:idle")
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json()["broker"].startswith("Redis unreachable")
