"""The Celery app and its whole beat schedule, in one place."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _refuse_without_secret(**kwargs):
    from portal.checks import refuse_to_serve_without_secret

    refuse_to_serve_without_secret()


KEEP_CONNECTIONS = 10**12  # tasks between the fixup's forced reconnects: never; CONN_MAX_AGE decides instead


@worker_init.connect
@worker_process_init.connect
def _reuse_database_connections(**kwargs):
    """Keep each worker's database connection across tasks.

    Celery's Django fixup closes every connection before and after each task unless its `db_reuse_max` is
    set, which costs a PostgreSQL session (fork, authentication, catalog caches) per task: one bench run
    opened 5,750. Here the fixup never closes them; `_close_stale_connections` applies Django's own rules
    around each task instead (CONN_MAX_AGE, CONN_HEALTH_CHECKS, a connection left unusable by an error).
    """
    for fixup in getattr(app, "_fixups", []):
        worker_fixup = getattr(fixup, "worker_fixup", None)
        if worker_fixup is not None:
            worker_fixup.db_reuse_max = KEEP_CONNECTIONS


@task_prerun.connect
@task_postrun.connect
def _close_stale_connections(sender=None, **kwargs):
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return  # an eager task runs inside the caller's request or transaction
    from django.db import close_old_connections

    close_old_connections()


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
    if settings.ADMISSION_SCHEDULER == "process":
        del schedule["admission-loop"]  # the scheduler process runs its own passes (manage.py scheduler)
    kwargs = {"simulated-cluster": {"retry_starts": True}}
    sender.conf.beat_schedule = {
        name: {"task": task, "schedule": seconds, "kwargs": kwargs.get(name, {})}
        for name, (task, seconds) in schedule.items()
        if task in sender.tasks
    }
