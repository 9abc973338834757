"""Writes of the Kubernetes app: inventory readings and their application, Kueue objects, Workload status."""

import logging

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from quotas import services as quota_services
from quotas.models import InstanceType, NodeGroup
from scheduling.backends.base import ClusterUnreachable
from scheduling.kube import manifests
from scheduling.kube.client import describe_source
from scheduling.kube.inventory import family_of, inventory_changes, item_dict
from scheduling.kube.models import InventorySnapshot, SnapshotStatus, WorkloadStatus
from scheduling.models import FINAL_STATES, Job

log = logging.getLogger(__name__)
KEEP_SNAPSHOTS = 100


def kubernetes_backend():
    from scheduling.backends.kubernetes import KubernetesCluster

    return KubernetesCluster()


def configured_inventory() -> tuple[dict, dict]:
    types = {
        it.name: {
            "accelerator_resource": it.accelerator_resource,
            "accelerators": it.accelerators,
            "vcpus": it.vcpus,
            "memory_gib": it.memory_gib,
        }
        for it in InstanceType.objects.all()
    }
    groups = {
        g.name: {"instance_type": g.instance_type.name, "node_count": g.node_count}
        for g in NodeGroup.objects.select_related("instance_type")
    }
    return types, groups


def inventory_sync(*, backend=None) -> InventorySnapshot:
    """Read the nodes and store the reading with its differences; never changes the configured inventory."""
    backend = backend or kubernetes_backend()
    try:
        items = [item_dict(i) for i in backend.inventory()]
        error = ""
    except ClusterUnreachable as exc:
        items, error = [], str(exc)
    try:
        source = backend.host
    except ClusterUnreachable:
        source = describe_source()
    with transaction.atomic():
        if error:
            snapshot = InventorySnapshot.objects.create(source=source, error=error, status=SnapshotStatus.FAILED)
        else:
            changes = inventory_changes(items, *configured_inventory())
            status = SnapshotStatus.PENDING if changes else SnapshotStatus.UNCHANGED
            latest = InventorySnapshot.objects.exclude(status=SnapshotStatus.FAILED).select_for_update().first()
            if latest and latest.status == status and latest.items == items and latest.changes == changes:
                latest.taken_at = timezone.now()
                latest.warnings = backend.last_inventory_warnings
                latest.save(update_fields=["taken_at", "warnings"])
                return latest
            InventorySnapshot.objects.filter(status=SnapshotStatus.PENDING).update(status=SnapshotStatus.SUPERSEDED)
            snapshot = InventorySnapshot.objects.create(
                source=source, items=items, changes=changes, warnings=backend.last_inventory_warnings, status=status
            )
        stale = InventorySnapshot.objects.values_list("pk", flat=True)[KEEP_SNAPSHOTS:]
        InventorySnapshot.objects.filter(pk__in=list(stale)).delete()
    return snapshot


@transaction.atomic
def inventory_apply(*, snapshot_id: int, user) -> InventorySnapshot:
    """Make InstanceType/NodeGroup rows match a reviewed reading, all or nothing."""
    if not user.is_portal_admin:
        raise PermissionDenied("only admins change the inventory")
    snapshot = InventorySnapshot.objects.select_for_update().filter(pk=snapshot_id).first()
    if snapshot is None:
        raise ValidationError("that inventory reading no longer exists; read the cluster again")
    if snapshot.status != SnapshotStatus.PENDING:
        raise ValidationError(f"that reading cannot be applied: {snapshot.get_status_display().lower()}")
    if inventory_changes(snapshot.items, *configured_inventory()) != snapshot.changes:
        raise ValidationError("the configured inventory changed since this reading; read the cluster again and review")
    with quota_services.inventory_change(user=user, reason=f"applied the cluster's inventory (reading #{snapshot.pk})"):
        _apply_inventory_changes(snapshot)
    snapshot.status = SnapshotStatus.APPLIED
    snapshot.applied_at = timezone.now()
    snapshot.applied_by = user
    snapshot.save(update_fields=["status", "applied_at", "applied_by"])
    return snapshot


def _apply_inventory_changes(snapshot: InventorySnapshot) -> None:
    for change in snapshot.changes:
        new = {field: values[1] for field, values in change["fields"].items()}
        if change["kind"] == "instance_type":
            it = InstanceType.objects.filter(name=change["name"]).first() or InstanceType(
                name=change["name"],
                family=family_of(change["name"]),
                accelerator_kind=change.get("accelerator_kind", ""),
            )
            for field, value in new.items():
                setattr(it, field, value)
            it.full_clean()
            it.save()
    for change in snapshot.changes:
        if change["kind"] != "node_group":
            continue
        group = NodeGroup.objects.filter(name=change["name"]).first() or NodeGroup(name=change["name"])
        group.instance_type = InstanceType.objects.get(name=change["instance_type"])
        group.node_count = change["fields"].get("node_count", [None, group.node_count])[1]
        group.full_clean()
        group.save()


def kueue_objects() -> list[dict]:
    from quotas.kueue import kueue_objects as render  # written alongside; imported when needed

    return render()


def kueue_apply(*, user, backend=None) -> list[tuple[str, str, str]]:
    """Create or replace the Kueue objects rendered from the allocations (admins only)."""
    if user is not None and not user.is_portal_admin:
        raise PermissionDenied("only admins apply Kueue objects")
    backend = backend or kubernetes_backend()
    results = backend.apply_objects(kueue_objects())
    log.info("Kueue objects applied by %s: %s", user, results)
    return results


def workload_status_sync(*, backend=None) -> int:
    """Store Kueue's reasons and queue positions for the portal's jobs. Returns how many were updated."""
    backend = backend or kubernetes_backend()
    views = {(v.namespace, v.job_name): v for v in backend.workloads()}
    jobs = Job.objects.exclude(state__in=FINAL_STATES).select_related("team")
    now = timezone.now()
    updated = 0
    with transaction.atomic():
        for job in jobs:
            view = views.get((job.team.namespace, manifests.job_name(job)))
            if view is None:
                continue
            WorkloadStatus.objects.update_or_create(
                job=job,
                defaults={
                    "workload": view.name,
                    "local_queue": view.queue,
                    "cluster_queue": view.cluster_queue,
                    "quota_reserved": view.quota_reserved,
                    "admitted": view.admitted,
                    "evicted": view.evicted,
                    "finished": view.finished,
                    "reason": view.reason,
                    "position": view.position,
                    "requeue_count": view.requeue_count,
                    "requeue_at": view.requeue_at,
                    "conditions": view.conditions,
                    "updated_at": now,
                },
            )
            updated += 1
        WorkloadStatus.objects.filter(job__state__in=FINAL_STATES).delete()
    return updated
