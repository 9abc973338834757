"""Reads of the Kubernetes app."""

from django.conf import settings

from scheduling.kube.client import describe_source, setting
from scheduling.kube.models import InventorySnapshot, SnapshotStatus, WorkloadStatus


def latest_snapshot() -> InventorySnapshot | None:
    return InventorySnapshot.objects.select_related("applied_by").first()


def latest_reading() -> InventorySnapshot | None:
    """The newest successful reading (a failed one says nothing about the nodes)."""
    return InventorySnapshot.objects.exclude(status=SnapshotStatus.FAILED).select_related("applied_by").first()


def recent_snapshots(limit: int = 10):
    return InventorySnapshot.objects.select_related("applied_by")[:limit]


def connection_summary() -> dict:
    return {
        "backend": settings.CLUSTER_BACKEND,
        "source": describe_source(),
        "mode": setting("KUBE_ADMISSION_MODE", "portal"),
        "timeout": setting("KUBE_REQUEST_TIMEOUT_SECONDS", 10.0),
    }


def workload_statuses_for(user):
    from scheduling.models import Job

    jobs = Job.objects.visible_to(user)
    return (
        WorkloadStatus.objects.filter(job__in=jobs)
        .select_related("job", "job__team")
        .order_by("local_queue", "position", "job_id")
    )
