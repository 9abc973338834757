"""What runs: job requests, their life as events, and the admission loop's runs."""

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from quotas.models import QuantityValidator, at_most
from scheduling.engine import bounds

# A container image reference (the distribution/reference grammar): [registry[:port]/]path[:tag][@digest].
# ASCII only, so no bidirectional or control characters can disguise what runs.
IMAGE_REFERENCE = (
    r"^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*"
    r"(?::[0-9]+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?\Z"
)
image_validator = RegexValidator(
    IMAGE_REFERENCE,
    "must be a container image reference such as nvcr.io/nvidia/pytorch:24.05-py3 "
    "(registry/path:tag or @sha256:digest, lower-case path, ASCII only)",
)


class JobState(models.TextChoices):
    PENDING = "pending", "Pending"
    ADMITTED = "admitted", "Admitted"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    PREEMPTED = "preempted", "Preempted"


ACTIVE_STATES = (JobState.ADMITTED, JobState.RUNNING)
QUEUED_STATES = (JobState.PENDING, JobState.PREEMPTED)
FINAL_STATES = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


class JobQuerySet(models.QuerySet):
    def visible_to(self, user):
        """The one visibility rule for jobs: admins and managers see all, scientists their teams' jobs."""
        if not user.is_authenticated:
            return self.none()
        if user.sees_all_teams:
            return self
        return self.filter(team__members=user)

    def queued(self):
        return self.filter(state__in=QUEUED_STATES)

    def active(self):
        return self.filter(state__in=ACTIVE_STATES)


class Job(models.Model):
    team = models.ForeignKey("quotas.Team", on_delete=models.PROTECT, related_name="jobs")
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="jobs")
    name = models.CharField(max_length=63)
    instance_type = models.ForeignKey(
        "quotas.InstanceType",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="empty = any instance type the team has quota on",
    )
    accelerators = models.PositiveIntegerField(
        default=0, validators=[at_most(bounds.MAX_ACCELERATORS_PER_NODE)], help_text="per pod"
    )
    vcpus = models.FloatField(default=0, validators=[QuantityValidator(bounds.MAX_VCPUS_PER_NODE)], help_text="per pod")
    memory_gib = models.FloatField(
        default=0, validators=[QuantityValidator(bounds.MAX_MEMORY_GIB_PER_NODE)], help_text="per pod"
    )
    pods = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1), at_most(bounds.MAX_PODS_PER_JOB)])
    priority_class = models.ForeignKey(
        "quotas.PriorityClass", null=True, blank=True, on_delete=models.PROTECT, related_name="jobs"
    )
    image = models.CharField(max_length=255, validators=[image_validator])
    command = models.TextField(blank=True)
    expected_duration_s = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[
            MinValueValidator(1),
            at_most(bounds.MAX_DURATION_S, f"{bounds.MAX_DURATION_S // 86400} days ({bounds.MAX_DURATION_S:,} s)"),
        ],
        help_text="how long it should run, in seconds; used for start estimates",
    )

    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.PENDING, db_index=True)
    reason = models.TextField(blank=True, help_text="why it waits, or why it last changed state")
    submitted_at = models.DateTimeField(default=timezone.now, db_index=True)
    admitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    assigned_instance_type = models.ForeignKey(
        "quotas.InstanceType", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    placement = models.JSONField(null=True, blank=True, help_text="node index per pod")
    borrowed = models.BooleanField(default=False, help_text="admitted on borrowed quota")
    preemption_count = models.PositiveIntegerField(default=0)
    backend_ref = models.CharField(max_length=253, blank=True, help_text="the cluster's name for it")
    backend_stop_pending = models.BooleanField(
        default=False, help_text="stopped here but the cluster has not confirmed yet; the loop retries"
    )
    cloned_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="clones", help_text="resubmitted from"
    )

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-submitted_at", "-id"]
        indexes = [models.Index(fields=["team", "state"]), models.Index(fields=["state", "submitted_at"])]

    def __str__(self):
        return f"{self.name} (#{self.pk})"

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES

    def requests(self) -> dict[str, float]:
        """Per-pod request in the engine's resource names."""
        key = self.instance_type.accelerator_key if self.instance_type_id else "gpu"
        req: dict[str, float] = {}
        if self.accelerators:
            req[key or "gpu"] = self.accelerators
        if self.vcpus:
            req["cpu"] = self.vcpus
        if self.memory_gib:
            req["memory"] = self.memory_gib
        return req


class JobEvent(models.Model):
    """One transition in a job's life, with its time and the reason in plain words."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    from_state = models.CharField(max_length=16, choices=JobState.choices, blank=True)
    to_state = models.CharField(max_length=16, choices=JobState.choices)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["to_state", "at"], name="jobevent_state_at")]  # preemption counts

    def __str__(self):
        return f"{self.job_id}: {self.from_state or '-'} -> {self.to_state}"


class AdmissionRun(models.Model):
    """One run of the admission loop: when, how long, what it did, and any error."""

    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    duration_ms = models.FloatField(null=True, blank=True)
    trigger = models.CharField(max_length=32, blank=True)
    admitted = models.PositiveIntegerField(default=0)
    preempted = models.PositiveIntegerField(default=0)
    pending = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self):
        return f"run at {self.started_at:%H:%M:%S}: +{self.admitted} -{self.preempted}"


class PublishedPlan(models.Model):
    """The engine's plan and team standing as the scheduler left them after a pass (scheduling/published.py).

    Pages read the latest row instead of planning the whole cluster per request. Compact: one row per
    publication, the planning order as packed job ids, the rest as small JSON maps.
    """

    published_at = models.DateTimeField(default=timezone.now)
    confirmed_at = models.DateTimeField(default=timezone.now, help_text="last found current by its publisher")
    source = models.CharField(max_length=16, help_text="warm (scheduler pass), loop (cold run) or page (fallback)")
    config = models.CharField(max_length=500, help_text="the configuration fingerprint it was planned under")
    event_top = models.BigIntegerField(default=0, help_text="the newest job event it reflects")
    engine_now = models.FloatField(help_text="the engine's clock when it was planned (seconds)")
    order = models.BinaryField(help_text="pending job ids in planning order, int64 little-endian")
    team_ranks = models.BinaryField(help_text="each of those jobs' place in its team's queue, int32")
    queued = models.JSONField(default=dict, help_text="team name -> jobs in its queue")
    holds = models.JSONField(default=dict, help_text="job id -> [planned start, instance type, [ids it waits for]]")
    estimates = models.JSONField(default=dict, help_text="job id -> [estimated start, instance type, asked at]")
    teams = models.JSONField(null=True, blank=True, help_text="team name -> the engine's TeamStatus fields")

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"plan #{self.pk} ({self.source}) at {self.published_at:%H:%M:%S}"
