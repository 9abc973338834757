"""Celery tasks of the Kubernetes app: thin wrappers around services. The beat schedule is in portal/celery.py."""

import logging

from celery import shared_task
from django.conf import settings

log = logging.getLogger(__name__)


@shared_task(name="scheduling.kube.tasks.inventory_sync", ignore_result=True)
def inventory_sync() -> dict:
    """Read the cluster's nodes and store the differences for an admin to review (kubernetes backend only)."""
    if settings.CLUSTER_BACKEND != "kubernetes":
        return {"skipped": "CLUSTER_BACKEND is not kubernetes"}
    from scheduling.kube.services import inventory_sync as sync

    snapshot = sync()
    if snapshot.error:
        log.warning("inventory sync: %s", snapshot.error)
    return {"status": snapshot.status, "changes": len(snapshot.changes)}


@shared_task(name="scheduling.kube.tasks.workload_status_sync", ignore_result=True)
def workload_status_sync() -> dict:
    """Read Kueue's Workloads back (Kueue admission mode only)."""
    if settings.CLUSTER_BACKEND != "kubernetes" or getattr(settings, "KUBE_ADMISSION_MODE", "portal") != "kueue":
        return {"skipped": "not in Kueue mode"}
    from scheduling.backends.base import ClusterUnreachable
    from scheduling.kube.services import workload_status_sync as sync

    try:
        return {"updated": sync()}
    except ClusterUnreachable as exc:
        log.warning("workload status: %s", exc)
        return {"error": str(exc)}
