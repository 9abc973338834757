"""Beat tasks for usage and alerts: thin wrappers that call a service and log what it did."""

import logging

from celery import shared_task

from scheduling.usage import alerts, digest, figures, services

log = logging.getLogger(__name__)

WEBHOOK_MAX_RETRIES = 6
BACKOFF_BASE_SECONDS = 15


@shared_task(name="scheduling.usage.tasks.usage_sample", ignore_result=True)
def usage_sample():
    rows = services.usage_sample_record()
    log.info("usage sample: %s rows", rows)
    figures.render_standard(presets=["24h"])  # the 24-hour charts read every sample
    return rows


@shared_task(name="scheduling.usage.tasks.usage_rollup", ignore_result=True)
def usage_rollup():
    hours, days = services.usage_rollup_recent()
    log.info("usage rollup: %s hourly, %s daily buckets", hours, days)
    figures.render_standard()  # every page's standard ranges, ready before anyone opens them
    return hours, days


@shared_task(name="scheduling.usage.tasks.usage_digests", ignore_result=True)
def usage_digests():
    sent = digest.digests_send_due()
    if sent:
        log.info("usage digests: %s sent", sent)
    return sent


@shared_task(name="scheduling.usage.tasks.usage_prune", ignore_result=True)
def usage_prune():
    deleted = services.usage_prune()
    log.info("usage prune: %s raw samples deleted", deleted)
    return deleted


@shared_task(name="scheduling.usage.tasks.alerts_evaluate", ignore_result=True)
def alerts_evaluate():
    counts = alerts.alerts_evaluate()
    if counts["fired"] or counts["resolved"]:
        log.info("alerts: %s", counts)
    return counts


def backoff_seconds(retries: int) -> int:
    """15 s, 30 s, 1 min, 2 min, 4 min, 8 min: exponential, capped at an hour."""
    return min(BACKOFF_BASE_SECONDS * 2**retries, 3600)


@shared_task(bind=True, name="scheduling.usage.tasks.alert_deliver", max_retries=WEBHOOK_MAX_RETRIES)
def alert_deliver(self, delivery_id: int):
    final = self.request.retries >= self.max_retries
    try:
        return alerts.delivery_send(delivery_id=delivery_id, final_attempt=final)
    except alerts.DeliveryError as exc:
        raise self.retry(exc=exc, countdown=backoff_seconds(self.request.retries)) from exc
