"""Alerts: fire on the transition, never again while active, resolve when clear; email and a real webhook."""

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from django.core import mail

from scheduling.models import JobState
from scheduling.usage import alerts, tasks
from scheduling.usage.models import AlertDelivery, AlertEvent, AlertKind, AlertRule, Granularity, UsageRollup
from tests.usage.conftest import T0, hours

pytestmark = pytest.mark.django_db


class Hook(BaseHTTPRequestHandler):
    """Fails the first `failures` POSTs with 503, then accepts; records every body it accepted."""

    failures = 0
    received: list = []
    attempts = 0

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).attempts += 1
        if type(self).attempts <= type(self).failures:
            self.send_response(503)
            self.end_headers()
            return
        type(self).received.append((self.headers["Content-Type"], json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook():
    Hook.failures, Hook.received, Hook.attempts = 0, [], 0
    server = HTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Hook, f"http://127.0.0.1:{server.server_port}/hook"
    server.shutdown()
    server.server_close()


@pytest.fixture
def no_backoff(monkeypatch):
    """Eager Celery runs retries in-line (a worker would wait the countdown). Eager mode re-raises a Retry when
    it propagates errors, so the retry test lets Celery handle it as a worker does."""
    from portal.celery import app

    propagates = app.conf.task_eager_propagates
    app.conf.task_eager_propagates = False
    waits = []
    monkeypatch.setattr(tasks, "backoff_seconds", lambda retries: waits.append(15 * 2**retries) or 0)
    yield waits
    app.conf.task_eager_propagates = propagates


def usage(team, it, add_sample, start, minutes, used, quota=8):
    for m in range(minutes):
        add_sample(team, it, start + timedelta(minutes=m), used_acc=used, quota_acc=quota)


def test_usage_above_quota_fires_once_then_resolves(
    team_a, p5, add_sample, webhook, no_backoff, django_capture_on_commit_callbacks
):
    hook, url = webhook
    rule = AlertRule.objects.create(
        team=team_a,
        kind=AlertKind.USAGE_ABOVE_QUOTA,
        threshold_pct=100,
        minutes=10,
        emails="ops@example.com, lead@example.com",
        webhook_url=url,
    )
    usage(team_a, p5, add_sample, T0, 5, used=12)
    with django_capture_on_commit_callbacks(execute=True):
        assert alerts.alerts_evaluate(now=T0 + timedelta(minutes=4))["fired"] == 0  # only 5 of 10 minutes yet
    usage(team_a, p5, add_sample, T0 + timedelta(minutes=5), 10, used=12)
    with django_capture_on_commit_callbacks(execute=True):
        assert alerts.alerts_evaluate(now=T0 + timedelta(minutes=14))["fired"] == 1
        assert alerts.alerts_evaluate(now=T0 + timedelta(minutes=14))["fired"] == 0  # still active: no re-fire
    event = AlertEvent.objects.get()
    assert event.active and event.value == 150 and "at least 150%" in event.message
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ops@example.com", "lead@example.com"]
    assert "FIRING" in mail.outbox[0].subject
    assert hook.received[0][0] == "application/json"
    assert hook.received[0][1]["status"] == "firing" and hook.received[0][1]["team"] == "team-a"

    usage(team_a, p5, add_sample, T0 + timedelta(minutes=15), 1, used=4)
    with django_capture_on_commit_callbacks(execute=True):
        assert alerts.alerts_evaluate(now=T0 + timedelta(minutes=15))["resolved"] == 1
        assert alerts.alerts_evaluate(now=T0 + timedelta(minutes=15)) == {"fired": 0, "resolved": 0, "checked": 1}
    event.refresh_from_db()
    assert not event.active and len(mail.outbox) == 2 and hook.received[1][1]["status"] == "resolved"
    assert rule.events.count() == 1


def test_webhook_is_retried_with_backoff_until_it_answers(
    team_a, scientist, p5, add_job, webhook, no_backoff, django_capture_on_commit_callbacks
):
    hook, url = webhook
    hook.failures = 2
    AlertRule.objects.create(team=team_a, kind=AlertKind.PENDING_TOO_LONG, minutes=30, webhook_url=url)
    add_job(team_a, scientist, p5, submitted=T0, name="stuck")
    with django_capture_on_commit_callbacks(execute=True):
        alerts.alerts_evaluate(now=T0 + timedelta(minutes=45))
    delivery = AlertDelivery.objects.get()
    assert (delivery.status, delivery.attempts, hook.attempts) == ("sent", 3, 3)
    assert no_backoff == [15, 30]  # exponential
    assert "stuck" in hook.received[0][1]["message"] and hook.received[0][1]["value"] == 45


def test_webhook_gives_up_after_the_last_retry(
    team_a, scientist, p5, add_job, webhook, no_backoff, django_capture_on_commit_callbacks
):
    hook, url = webhook
    hook.failures = 100
    AlertRule.objects.create(team=team_a, kind=AlertKind.PENDING_TOO_LONG, minutes=30, webhook_url=url)
    add_job(team_a, scientist, p5, submitted=T0)
    with django_capture_on_commit_callbacks(execute=True):
        alerts.alerts_evaluate(now=T0 + timedelta(minutes=45))
    delivery = AlertDelivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == tasks.WEBHOOK_MAX_RETRIES + 1
    assert "503" in delivery.last_error and AlertEvent.objects.get().active


def test_pending_too_long_counts_from_the_last_preemption(team_a, scientist, p5, add_job):
    rule = AlertRule.objects.create(team=team_a, kind=AlertKind.PENDING_TOO_LONG, minutes=30, emails="a@example.com")
    add_job(
        team_a,
        scientist,
        p5,
        submitted=T0,
        life=[(JobState.ADMITTED, T0 + hours(1)), (JobState.PREEMPTED, T0 + hours(2))],
    )
    firing, value, _ = alerts.pending_too_long(rule, T0 + hours(2) + timedelta(minutes=20))
    assert not firing and value == 20
    assert alerts.pending_too_long(rule, T0 + hours(3))[0]


def test_quota_idle_needs_a_week_and_fires_below_the_threshold(team_a, p5):
    rule = AlertRule.objects.create(team=team_a, kind=AlertKind.QUOTA_IDLE, threshold_pct=20, emails="a@example.com")
    now = T0 + timedelta(days=7)
    for h in range(24 * 7):
        UsageRollup.objects.create(
            granularity=Granularity.HOUR,
            bucket=T0 + hours(h),
            team=team_a,
            instance_type=p5,
            acc_hours=1,
            quota_acc_hours=8,
        )
    firing, value, message = alerts.quota_idle(rule, now)
    assert firing and value == 12.5 and "12%" in message
    assert not alerts.quota_idle(rule, T0 + timedelta(days=3))[0]  # less than a week recorded
    rule.threshold_pct = 10
    assert not alerts.quota_idle(rule, now)[0]


def test_disabling_a_rule_closes_its_alert_quietly(team_a, admin_user):
    rule = AlertRule.objects.create(team=team_a, kind=AlertKind.QUOTA_IDLE, threshold_pct=20, emails="a@example.com")
    AlertEvent.objects.create(rule=rule, team=team_a, message="idle")
    alerts.alert_rule_update(rule=rule, data={"enabled": False})
    assert not AlertEvent.objects.get().active and not AlertDelivery.objects.exists()


def test_alert_history_page_shows_firings_and_deliveries(team_a, admin_user, client_for):
    rule = AlertRule.objects.create(team=team_a, kind=AlertKind.QUOTA_IDLE, threshold_pct=20, emails="a@example.com")
    event = AlertEvent.objects.create(rule=rule, team=team_a, message="team-a used 3% of its quota")
    AlertDelivery.objects.create(
        event=event, transition="fired", channel="email", target="a", status="sent", attempts=1
    )
    page = client_for(admin_user).get("/alerts/").content.decode()
    assert "team-a used 3% of its quota" in page and "fired email: sent" in page and "Nothing is firing" not in page


def test_usage_above_quota_reads_gpus_and_neuron_devices_apart(team_a, p5, add_sample):
    from quotas.models import InstanceType

    trn1 = InstanceType.objects.create(
        name="ml.trn1.32xlarge", accelerator_resource="neuron", accelerators=16, vcpus=128, memory_gib=512
    )
    rule = AlertRule.objects.create(
        team=team_a, kind=AlertKind.USAGE_ABOVE_QUOTA, threshold_pct=120, minutes=5, emails="ops@example.com"
    )
    # 12 of 8 GPUs (150 %) and none of 16 Neuron devices: added together that would read 12 of 24, 50 %
    usage(team_a, p5, add_sample, T0, 6, used=12)
    usage(team_a, trn1, add_sample, T0, 6, used=0, quota=16)
    fired, value, message = alerts.usage_above_quota(rule, T0 + timedelta(minutes=5))
    assert fired and value == 150 and "of its GPU quota" in message
    rule.threshold_pct = 160
    assert alerts.usage_above_quota(rule, T0 + timedelta(minutes=5))[0] is False


def test_quota_idle_reads_gpus_and_neuron_devices_apart(team_a, p5):
    from quotas.models import InstanceType

    trn1 = InstanceType.objects.create(
        name="ml.trn1.32xlarge", accelerator_resource="neuron", accelerators=16, vcpus=128, memory_gib=512
    )
    rule = AlertRule.objects.create(team=team_a, kind=AlertKind.QUOTA_IDLE, threshold_pct=20, emails="a@example.com")
    for h in range(24 * 7):  # every GPU of the quota used, the Neuron quota idle: 8 of 24 added together, 33 %
        for it, used, quota in ((p5, 8, 8), (trn1, 0, 16)):
            UsageRollup.objects.create(granularity=Granularity.HOUR, bucket=T0 + hours(h), team=team_a,
                                       instance_type=it, acc_hours=used, quota_acc_hours=quota)  # fmt: skip
    firing, value, message = alerts.quota_idle(rule, T0 + timedelta(days=7))
    assert firing and value == 0 and "of its Neuron quota" in message
