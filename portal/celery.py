"""The Celery app and its whole beat schedule, in one place."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _beat_schedule(sender, **kwargs):
    """Every periodic task of the portal. Tasks that do not exist yet are simply not scheduled."""
    from django.conf import settings

    schedule = {
        "admission-loop": ("scheduling.tasks.admission_tick", settings.ADMISSION_INTERVAL.total_seconds()),
        "simulated-cluster": ("scheduling.tasks.cluster_tick", 2.0),
        "usage-sample": ("scheduling.tasks.usage_sample", 60.0),
        "usage-rollup": ("scheduling.tasks.usage_rollup", 300.0),
        "alerts": ("scheduling.tasks.alerts_evaluate", 60.0),
        "demo-traffic": ("scheduling.tasks.demo_traffic_tick", 10.0),
        "inventory-sync": ("scheduling.tasks.inventory_sync", 300.0),
    }
    sender.conf.beat_schedule = {
        name: {"task": task, "schedule": seconds} for name, (task, seconds) in schedule.items() if task in sender.tasks
    }
