"""Alert services: rules, evaluating them (fire on the transition, resolve when it clears) and notifying.

A rule fires once when its condition becomes true and resolves once when it clears; while it stays true
nothing new is sent. Each notification is an AlertDelivery row sent by a Celery task that retries with
exponential backoff (see tasks.alert_deliver).
"""

import json
import logging
import urllib.error
import urllib.request
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import DateTimeField, F, Min, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from quotas.selectors import RESOURCE_LABELS
from scheduling.models import QUEUED_STATES, Job, JobEvent, JobState
from scheduling.usage.models import (
    AlertDelivery,
    AlertEvent,
    AlertKind,
    AlertRule,
    AlertRuleChange,
    DeliveryStatus,
    Granularity,
    UsageRollup,
    UsageSample,
)

log = logging.getLogger(__name__)
IDLE_WINDOW = timedelta(days=7)


class DeliveryError(Exception):
    """A notification could not be sent this time; the task retries it."""


# ---- rules -----------------------------------------------------------------------------------------------------


def _audit(rule: AlertRule, action: str, by) -> None:
    targets = ", ".join(filter(None, [rule.emails, rule.webhook_url])) or "nobody"
    state = "" if rule.enabled else " (disabled)"
    AlertRuleChange.objects.create(
        rule=None if action == AlertRuleChange.Action.DELETED else rule,
        team_id=rule.team_id,
        action=action,
        description=f"{rule}{state}; notifies {targets}",
        by=by if by is not None and by.is_authenticated else None,
    )


@transaction.atomic
def alert_rule_create(*, data: dict, by) -> AlertRule:
    rule = AlertRule(**data, created_by=by)
    rule.full_clean()
    rule.save()
    _audit(rule, AlertRuleChange.Action.CREATED, by)
    return rule


@transaction.atomic
def alert_rule_update(*, rule: AlertRule, data: dict, by=None) -> AlertRule:
    for field, value in data.items():
        setattr(rule, field, value)
    rule.full_clean()
    rule.save()
    if not rule.enabled:
        # A switched-off rule has nothing to say any more: close its firing without a notification.
        rule.events.filter(resolved_at__isnull=True).update(resolved_at=timezone.now())
    _audit(rule, AlertRuleChange.Action.CHANGED, by)
    return rule


@transaction.atomic
def alert_rule_delete(*, rule: AlertRule, by) -> None:
    """Delete a rule (and its firings); the audit trail keeps what it was and who deleted it."""
    _audit(rule, AlertRuleChange.Action.DELETED, by)
    rule.delete()


# ---- conditions ------------------------------------------------------------------------------------------------


def usage_above_quota(rule: AlertRule, now: datetime) -> tuple[bool, float | None, str]:
    """True when every sample of the last Y minutes had the team above X % of its quota in one accelerator
    resource (GPUs and Neuron devices apart, never added; vCPUs for a team without accelerators) and the samples
    cover those minutes. The resource furthest above its quota is the one reported."""
    since = now - timedelta(minutes=rule.minutes)
    rows = list(
        UsageSample.objects.filter(team=rule.team, at__gt=since, at__lte=now)
        .values("at", resource=F("instance_type__accelerator_resource"))
        .annotate(u=Sum("used_acc"), q=Sum("quota_acc"), uc=Sum("used_cpu"), qc=Sum("quota_cpu"))
        .order_by("at")
    )
    tolerance = timedelta(seconds=1.5 * settings.USAGE_SAMPLE_SECONDS)
    if not rows or rows[0]["at"] > since + tolerance or rows[-1]["at"] < now - tolerance:
        return False, None, "not enough samples for the window"
    ticks = sorted({r["at"] for r in rows})
    per_resource: dict[str, dict] = {}
    for r in rows:
        if r["resource"] and (r["u"] or r["q"]):
            per_resource.setdefault(r["resource"], {})[r["at"]] = (r["u"], r["q"])
    if not per_resource:  # no accelerators: vCPUs, all instance types together
        for r in rows:
            used, quota = per_resource.setdefault("cpu", {}).get(r["at"], (0.0, 0.0))
            per_resource["cpu"][r["at"]] = (used + (r["uc"] or 0), quota + (r["qc"] or 0))

    def lowest(values: dict) -> float:
        pcts = []
        for at in ticks:
            used, quota = values.get(at, (0.0, 0.0))
            pcts.append(100 * used / quota if quota else (float("inf") if used else 0.0))
        return min(pcts)

    resource, low = max(((r, lowest(v)) for r, v in per_resource.items()), key=lambda item: item[1])
    shown = "no quota" if low == float("inf") else f"{low:.0f}%"
    return (
        low > rule.threshold_pct,
        None if low == float("inf") else round(low, 1),
        f"{rule.team.name} used at least {shown} of its {RESOURCE_LABELS[resource]} quota for the last "
        f"{rule.minutes} min (threshold {rule.threshold_pct:g}%)",
    )


def pending_too_long(rule: AlertRule, now: datetime) -> tuple[bool, float | None, str]:
    """True when one of the team's queued jobs has waited longer than Z minutes (since submission, or since it
    was last preempted)."""
    last_preempted = (
        JobEvent.objects.filter(job=OuterRef("pk"), to_state=JobState.PREEMPTED).order_by("-at").values("at")[:1]
    )
    oldest = (
        Job.objects.filter(team=rule.team, state__in=QUEUED_STATES)
        .annotate(since=Coalesce(Subquery(last_preempted, output_field=DateTimeField()), F("submitted_at")))
        .order_by("since")
        .first()
    )
    if oldest is None:
        return False, None, "no job waits"
    minutes = (now - oldest.since).total_seconds() / 60
    return (
        minutes > rule.minutes,
        round(minutes, 1),
        f"job {oldest.name} (#{oldest.pk}) of {rule.team.name} has waited {minutes:.0f} min "
        f"(threshold {rule.minutes} min)",
    )


def quota_idle(rule: AlertRule, now: datetime) -> tuple[bool, float | None, str]:
    """True when, over the last 7 days of hourly rollups, the team used less than W % of its quota in one
    accelerator resource (GPUs and Neuron devices apart; only once a full week has been recorded). The resource
    with the least of its quota used is the one reported."""
    since = now - IDLE_WINDOW
    rollups = UsageRollup.objects.filter(
        granularity=Granularity.HOUR, team=rule.team, bucket__gte=since, bucket__lt=now
    )
    first = rollups.aggregate(first=Min("bucket"))["first"]
    per_resource = (
        rollups.exclude(instance_type__accelerator_resource="")
        .values(resource=F("instance_type__accelerator_resource"))
        .annotate(used=Sum(F("acc_hours") - F("borrowed_acc_hours")), quota=Sum("quota_acc_hours"))
    )
    pcts = {r["resource"]: 100 * (r["used"] or 0) / r["quota"] for r in per_resource if r["quota"]}
    if not pcts or first is None or first > since + timedelta(hours=1):
        return False, None, "less than a week of history, or no accelerator quota"
    resource, pct = min(pcts.items(), key=lambda item: item[1])
    return (
        pct < rule.threshold_pct,
        round(pct, 1),
        f"{rule.team.name} used {pct:.0f}% of its {RESOURCE_LABELS[resource]} quota over the last 7 days "
        f"(threshold {rule.threshold_pct:g}%)",
    )


CONDITIONS = {
    AlertKind.USAGE_ABOVE_QUOTA: usage_above_quota,
    AlertKind.PENDING_TOO_LONG: pending_too_long,
    AlertKind.QUOTA_IDLE: quota_idle,
}


# ---- evaluation ------------------------------------------------------------------------------------------------


def alerts_evaluate(*, now: datetime | None = None) -> dict[str, int]:
    """Check every enabled rule; fire those that became true, resolve those that cleared."""
    now = now or timezone.now()
    counts = {"fired": 0, "resolved": 0, "checked": 0}
    active = {e.rule_id: e for e in AlertEvent.objects.filter(resolved_at__isnull=True)}
    for rule in AlertRule.objects.filter(enabled=True).select_related("team"):
        counts["checked"] += 1
        firing, value, message = CONDITIONS[rule.kind](rule, now)
        event = active.get(rule.pk)
        if firing and event is None:
            if alert_fire(rule=rule, value=value, message=message, now=now):
                counts["fired"] += 1
        elif not firing and event is not None:
            alert_resolve(event=event, message=message, now=now)
            counts["resolved"] += 1
    return counts


def _queue_deliveries(event: AlertEvent, transition: str) -> None:
    rule = event.rule
    targets = [("email", ", ".join(rule.email_list()))] if rule.email_list() else []
    if rule.webhook_url:
        targets.append(("webhook", rule.webhook_url))
    for channel, target in targets:
        delivery = AlertDelivery.objects.create(event=event, transition=transition, channel=channel, target=target)
        transaction.on_commit(lambda pk=delivery.pk: _send_later(pk))


def _send_later(delivery_id: int) -> None:
    from scheduling.usage.tasks import alert_deliver

    alert_deliver.delay(delivery_id)


def alert_fire(*, rule: AlertRule, value, message: str, now: datetime) -> AlertEvent | None:
    """Open a firing for the rule and queue its notifications. None if one is already open (another worker)."""
    try:
        with transaction.atomic():
            event = AlertEvent.objects.create(rule=rule, team=rule.team, fired_at=now, value=value, message=message)
            _queue_deliveries(event, "fired")
    except IntegrityError:
        return None
    return event


@transaction.atomic
def alert_resolve(*, event: AlertEvent, message: str, now: datetime) -> None:
    updated = AlertEvent.objects.filter(pk=event.pk, resolved_at__isnull=True).update(resolved_at=now)
    if updated:
        event.resolved_at = now
        _queue_deliveries(event, "resolved")


# ---- notifications ---------------------------------------------------------------------------------------------


def payload(delivery: AlertDelivery) -> dict:
    event = delivery.event
    return {
        "status": "firing" if delivery.transition == "fired" else "resolved",
        "team": event.team.name,
        "kind": event.rule.kind,
        "rule": event.rule.describe(),
        "message": event.message,
        "value": event.value,
        "fired_at": event.fired_at.isoformat(),
        "resolved_at": event.resolved_at.isoformat() if event.resolved_at else None,
        "event_id": event.pk,
    }


def _send_email(delivery: AlertDelivery, body: dict) -> None:
    state = "FIRING" if body["status"] == "firing" else "resolved"
    subject = f"[GPU portal] {state}: {body['team']} — {body['rule']}"
    text = f"{body['message']}\n\nFired at {body['fired_at']}"
    if body["resolved_at"]:
        text += f"\nResolved at {body['resolved_at']}"
    try:
        send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, [e.strip() for e in delivery.target.split(",")])
    except OSError as exc:
        raise DeliveryError(f"mail server: {exc}") from exc


def _send_webhook(delivery: AlertDelivery, body: dict) -> None:
    request = urllib.request.Request(
        delivery.target,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "gpu-quota-portal-alerts"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (admins set http(s) URLs)
            response.read()
    except urllib.error.HTTPError as exc:
        raise DeliveryError(f"webhook answered {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise DeliveryError(f"webhook unreachable: {exc}") from exc


def delivery_send(*, delivery_id: int, final_attempt: bool) -> bool:
    """Try one delivery once. Records the attempt; raises DeliveryError when it should be retried."""
    delivery = AlertDelivery.objects.select_related("event__rule", "event__team").get(pk=delivery_id)
    if delivery.status == DeliveryStatus.SENT:
        return True
    body = payload(delivery)
    sender = _send_email if delivery.channel == "email" else _send_webhook
    delivery.attempts += 1
    try:
        sender(delivery, body)
    except DeliveryError as exc:
        delivery.last_error = str(exc)
        delivery.status = DeliveryStatus.FAILED if final_attempt else DeliveryStatus.PENDING
        delivery.save(update_fields=["attempts", "last_error", "status"])
        log.warning("alert delivery %s attempt %s failed: %s", delivery.pk, delivery.attempts, exc)
        if final_attempt:
            return False
        raise
    delivery.status = DeliveryStatus.SENT
    delivery.sent_at = timezone.now()
    delivery.save(update_fields=["attempts", "last_error", "status", "sent_at"])
    return True
