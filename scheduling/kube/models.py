"""What the portal read from Kubernetes: observed node inventory (reviewed before it is applied) and
Kueue's view of each job."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class SnapshotStatus(models.TextChoices):
    PENDING = "pending", "Differences await review"
    UNCHANGED = "unchanged", "Matches the configured inventory"
    APPLIED = "applied", "Applied"
    SUPERSEDED = "superseded", "Superseded by a newer reading"
    FAILED = "failed", "Could not read the cluster"


class InventorySnapshot(models.Model):
    """One reading of the cluster's nodes and its differences from the configured inventory."""

    taken_at = models.DateTimeField(default=timezone.now, db_index=True)
    source = models.CharField(max_length=255, blank=True, help_text="the API server read")
    items = models.JSONField(default=list, help_text="node groups as observed")
    changes = models.JSONField(default=list, help_text="what applying would change in InstanceType/NodeGroup")
    warnings = models.JSONField(default=list)
    error = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=SnapshotStatus.choices, default=SnapshotStatus.PENDING)
    applied_at = models.DateTimeField(null=True, blank=True)
    applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-taken_at", "-id"]

    def __str__(self):
        return f"inventory read at {self.taken_at:%Y-%m-%d %H:%M}: {self.get_status_display()}"


class WorkloadStatus(models.Model):
    """Kueue's Workload for a job (Kueue admission mode): why it waits and where it stands in its queue."""

    job = models.OneToOneField("scheduling.Job", on_delete=models.CASCADE, related_name="kueue_status")
    workload = models.CharField(max_length=253)
    local_queue = models.CharField(max_length=253, blank=True)
    cluster_queue = models.CharField(max_length=253, blank=True)
    quota_reserved = models.BooleanField(default=False)
    admitted = models.BooleanField(default=False)
    evicted = models.BooleanField(default=False)
    finished = models.BooleanField(default=False)
    reason = models.TextField(blank=True)
    position = models.PositiveIntegerField(null=True, blank=True, help_text="place among pending in its LocalQueue")
    requeue_count = models.PositiveIntegerField(default=0)
    requeue_at = models.DateTimeField(null=True, blank=True)
    conditions = models.JSONField(default=list)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["local_queue", "position", "job_id"]
        verbose_name_plural = "workload statuses"

    def __str__(self):
        return f"{self.workload}: {self.reason}"
