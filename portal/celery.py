"""The Celery app and its whole beat schedule, in one place."""

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _refuse_without_secret(**kwargs):
    from portal.checks import refuse_to_serve_without_secret

    refuse_to_serve_without_secret()


@app.on_after_finalize.connect
def _beat_schedule(sender, **kwargs):
    """Every periodic task of the portal. Tasks that do not exist yet are simply not scheduled."""
    from django.conf import settings

    schedule = {
        "admission-loop": ("scheduling.tasks.admission_tick", settings.ADMISSION_INTERVAL.total_seconds()),
        "simulated-cluster": ("scheduling.tasks.cluster_tick", 2.0),
        "demo-traffic": ("scheduling.tasks.demo_traffic_tick", 10.0),
        "usage-sample": ("scheduling.usage.tasks.usage_sample", settings.USAGE_SAMPLE_SECONDS),
        "usage-rollup": ("scheduling.usage.tasks.usage_rollup", 300.0),
        "usage-prune": ("scheduling.usage.tasks.usage_prune", 3600.0),
        "usage-digests": ("scheduling.usage.tasks.usage_digests", 900.0),
        "alerts": ("scheduling.usage.tasks.alerts_evaluate", 60.0),
        "inventory-sync": ("scheduling.kube.tasks.inventory_sync", 300.0),
        "kueue-status": ("scheduling.kube.tasks.workload_status_sync", 15.0),
        "quota-requests-due": ("scheduling.whatif.tasks.apply_due_requests_task", 3600.0),
        "right-sizing": ("scheduling.whatif.tasks.right_sizing_task", 7 * 86400.0),
    }
    sender.conf.beat_schedule = {
        name: {"task": task, "schedule": seconds} for name, (task, seconds) in schedule.items() if task in sender.tasks
    }
