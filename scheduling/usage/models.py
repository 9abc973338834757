"""Usage over time: raw samples, hourly and daily rollups, and alert rules with their history.

Every sample and rollup row is one team on one instance type. Each measure comes in three resources:
accelerators (the type's GPUs or Neuron devices), vCPUs and memory in GiB, as parallel columns so a chart
or report picks a resource by column name instead of by a join.
"""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

# Resource short names used in column names, with what a person calls them.
RESOURCES = {"acc": "Accelerators", "cpu": "vCPUs", "mem": "Memory (GiB)"}
# The engine's resource name for each (accelerators depend on the instance type).
ENGINE_RESOURCE = {"cpu": "cpu", "mem": "memory"}
# What a sample measures, per resource.
MEASURES = ("used", "borrowed", "lent", "pending", "quota", "fair_share")


def measure_fields():
    """The float column names of a sample: used_acc, used_cpu, ..., fair_share_mem."""
    return [f"{m}_{r}" for m in MEASURES for r in RESOURCES]


class MeasuresMixin(models.Model):
    """One float per measure and resource. Rollups store the average over their bucket in these."""

    used_acc = models.FloatField(default=0)
    used_cpu = models.FloatField(default=0)
    used_mem = models.FloatField(default=0)
    borrowed_acc = models.FloatField(default=0, help_text="part of used that is beyond the team's quota")
    borrowed_cpu = models.FloatField(default=0)
    borrowed_mem = models.FloatField(default=0)
    lent_acc = models.FloatField(default=0, help_text="the team's idle quota that others use")
    lent_cpu = models.FloatField(default=0)
    lent_mem = models.FloatField(default=0)
    pending_acc = models.FloatField(default=0, help_text="requested by queued jobs")
    pending_cpu = models.FloatField(default=0)
    pending_mem = models.FloatField(default=0)
    quota_acc = models.FloatField(default=0)
    quota_cpu = models.FloatField(default=0)
    quota_mem = models.FloatField(default=0)
    fair_share_acc = models.FloatField(default=0)
    fair_share_cpu = models.FloatField(default=0)
    fair_share_mem = models.FloatField(default=0)
    pending_jobs = models.FloatField(default=0)

    class Meta:
        abstract = True


class UsageSample(MeasuresMixin):
    """What one team had on one instance type at one moment (one row per team, type and sampling tick)."""

    at = models.DateTimeField(db_index=True)
    team = models.ForeignKey("quotas.Team", on_delete=models.CASCADE, related_name="usage_samples")
    instance_type = models.ForeignKey("quotas.InstanceType", on_delete=models.CASCADE, related_name="+")
    seconds = models.FloatField(
        default=60, validators=[MinValueValidator(0.0)], help_text="the span of time this sample stands for"
    )

    class Meta:
        ordering = ["at", "team_id", "instance_type_id"]
        constraints = [
            models.UniqueConstraint(fields=["at", "team", "instance_type"], name="one_sample_per_tick"),
        ]
        indexes = [models.Index(fields=["team", "at"])]

    def __str__(self):
        return f"{self.team_id}/{self.instance_type_id} at {self.at:%Y-%m-%d %H:%M}"


class Granularity(models.TextChoices):
    HOUR = "hour", "Hourly"
    DAY = "day", "Daily"


class UsageRollup(MeasuresMixin):
    """Averages over an hour or a day, the peaks, and the resource-hours that add up in reports."""

    granularity = models.CharField(max_length=4, choices=Granularity.choices)
    bucket = models.DateTimeField(help_text="start of the hour or day")
    team = models.ForeignKey("quotas.Team", on_delete=models.CASCADE, related_name="usage_rollups")
    instance_type = models.ForeignKey("quotas.InstanceType", on_delete=models.CASCADE, related_name="+")
    samples = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0, help_text="time covered by samples")
    max_used_acc = models.FloatField(default=0)
    max_used_cpu = models.FloatField(default=0)
    max_used_mem = models.FloatField(default=0)
    max_pending_acc = models.FloatField(default=0)
    acc_hours = models.FloatField(default=0, help_text="accelerator-hours used")
    borrowed_acc_hours = models.FloatField(default=0)
    quota_acc_hours = models.FloatField(default=0)
    idle_quota_acc_hours = models.FloatField(default=0, help_text="quota accelerator-hours the team did not use")
    cpu_hours = models.FloatField(default=0)
    borrowed_cpu_hours = models.FloatField(default=0)
    quota_cpu_hours = models.FloatField(default=0)

    class Meta:
        ordering = ["granularity", "bucket", "team_id", "instance_type_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["granularity", "bucket", "team", "instance_type"], name="one_rollup_per_bucket"
            ),
        ]
        indexes = [models.Index(fields=["granularity", "team", "bucket"])]

    def __str__(self):
        return f"{self.granularity} {self.bucket:%Y-%m-%d %H:%M} {self.team_id}/{self.instance_type_id}"


class AlertKind(models.TextChoices):
    USAGE_ABOVE_QUOTA = "usage_above_quota", "Usage above % of quota"
    PENDING_TOO_LONG = "pending_too_long", "A job pending too long"
    QUOTA_IDLE = "quota_idle", "Quota idle (utilization below % over a week)"


class AlertRule(models.Model):
    """A threshold an admin set for a team, and where to say when it is crossed."""

    team = models.ForeignKey("quotas.Team", on_delete=models.CASCADE, related_name="alert_rules")
    kind = models.CharField(max_length=24, choices=AlertKind.choices)
    threshold_pct = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0)],
        help_text="usage above: % of quota (X); quota idle: utilization below % (W)",
    )
    minutes = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="usage above: for how many minutes (Y); pending too long: minutes a job may wait (Z)",
    )
    emails = models.TextField(blank=True, help_text="addresses to notify, separated by commas")
    webhook_url = models.URLField(blank=True, help_text="receives a JSON POST when the alert fires or clears")
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team__name", "kind", "id"]

    def __str__(self):
        return f"{self.team}: {self.describe()}"

    def describe(self) -> str:
        if self.kind == AlertKind.USAGE_ABOVE_QUOTA:
            return f"usage above {self.threshold_pct:g}% of quota for {self.minutes} min"
        if self.kind == AlertKind.PENDING_TOO_LONG:
            return f"a job pending longer than {self.minutes} min"
        return f"quota utilization below {self.threshold_pct:g}% over 7 days"

    def email_list(self) -> list[str]:
        return [e.strip() for e in self.emails.split(",") if e.strip()]


class AlertRuleChange(models.Model):
    """The audit trail of alert rules: who created, changed or deleted which rule, and what it said then.
    Kept after the rule is deleted (the rule link is cleared, the description stays)."""

    class Action(models.TextChoices):
        CREATED = "created", "Created"
        CHANGED = "changed", "Changed"
        DELETED = "deleted", "Deleted"

    rule = models.ForeignKey(AlertRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes")
    team = models.ForeignKey("quotas.Team", on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=8, choices=Action.choices)
    description = models.TextField(help_text="the rule as it was after the change (before, for a deletion)")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self):
        return f"{self.get_action_display()} {self.description}"


class AlertEvent(models.Model):
    """One firing of a rule: fired when the condition became true, resolved when it cleared."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="events")
    team = models.ForeignKey("quotas.Team", on_delete=models.CASCADE, related_name="alert_events")
    fired_at = models.DateTimeField(default=timezone.now, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    value = models.FloatField(null=True, blank=True, help_text="the measured value when it fired")
    message = models.TextField()

    class Meta:
        ordering = ["-fired_at", "-id"]
        constraints = [
            # At most one active firing per rule: the database itself refuses a second one.
            models.UniqueConstraint(
                fields=["rule"], condition=models.Q(resolved_at__isnull=True), name="one_active_event_per_rule"
            ),
        ]

    def __str__(self):
        return f"{self.team_id}: {self.message}"

    @property
    def active(self) -> bool:
        return self.resolved_at is None


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


class AlertDelivery(models.Model):
    """One notification of an alert event (fired or resolved) on one channel, with its attempts."""

    event = models.ForeignKey(AlertEvent, on_delete=models.CASCADE, related_name="deliveries")
    transition = models.CharField(max_length=8, choices=[("fired", "Fired"), ("resolved", "Resolved")])
    channel = models.CharField(max_length=8, choices=[("email", "Email"), ("webhook", "Webhook")])
    target = models.TextField()
    status = models.CharField(max_length=8, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"{self.transition} {self.channel} to {self.target}: {self.status}"


class DigestFrequency(models.TextChoices):
    OFF = "off", "No digest"
    DAILY = "daily", "Daily"
    WEEKLY = "weekly", "Weekly"


class DigestSubscription(models.Model):
    """How often a user gets their teams' usage against quota by e-mail (chart as PNG, summary CSV attached)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="digest")
    frequency = models.CharField(max_length=8, choices=DigestFrequency.choices, default=DigestFrequency.OFF)
    last_sent_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.user}: {self.get_frequency_display()}"
