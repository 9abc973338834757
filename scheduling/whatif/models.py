"""Stored what-if replays: a draft configuration, the window of history it is replayed over, and the result."""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone

MAX_WINDOW_DAYS = 90


class ReplayStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ReplayDecision(models.TextChoices):
    OPEN = "open", "Open"
    SAVED = "saved", "Saved as the configuration"
    DISCARDED = "discarded", "Thrown away"


class Replay(models.Model):
    """One what-if: `draft` (the `quotas export` format; sections it leaves out stay as they are) replayed over
    the jobs submitted in [window_start, window_end), beside what really happened."""

    title = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    draft = models.JSONField(blank=True, help_text="the draft configuration, in the `quotas export` format")
    base = models.JSONField(help_text="the whole configuration when the draft was made, to detect later changes")
    changes = models.JSONField(default=list, blank=True, help_text="the plan: what the draft changes, one line each")
    window_days = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(MAX_WINDOW_DAYS)])
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()

    status = models.CharField(max_length=16, choices=ReplayStatus.choices, default=ReplayStatus.QUEUED)
    progress = models.PositiveIntegerField(default=0, validators=[MaxValueValidator(100)])
    message = models.CharField(max_length=300, blank=True, help_text="what it is doing, or why it failed")
    results = models.JSONField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    decision = models.CharField(max_length=16, choices=ReplayDecision.choices, default=ReplayDecision.OPEN)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(blank=True, max_length=300)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"replay #{self.pk}: {self.title}"

    def get_absolute_url(self):
        return reverse("whatif:replay-detail", args=[self.pk])

    @property
    def finished(self) -> bool:
        return self.status in (ReplayStatus.DONE, ReplayStatus.FAILED)


class RequestStatus(models.TextChoices):
    PENDING = "pending", "Waiting for an admin"
    APPROVED = "approved", "Approved, takes effect on its date"
    APPLIED = "applied", "Approved and in effect"
    REFUSED = "refused", "Refused"
    WITHDRAWN = "withdrawn", "Withdrawn"


OPEN_REQUEST_STATES = (RequestStatus.PENDING,)
ALLOCATION_FIELDS = ("instances", "accelerators", "vcpus", "memory_gib")


class QuotaRequestQuerySet(models.QuerySet):
    def visible_to(self, user):
        """The one rule: admins and managers see every request, scientists their teams' requests."""
        if not user.is_authenticated:
            return self.none()
        if user.sees_all_teams:
            return self
        return self.filter(team__members=user)


class QuotaRequest(models.Model):
    """A scientist asks for a team's quota on one instance type to become this (more, or less), from a date,
    for a reason. An admin approves it (the allocation saved as a normal version naming the request), changes
    the amounts (and replays again), or refuses with a reason. Amounts are the allocation's fields, with the
    allocation's own validators."""

    team = models.ForeignKey("quotas.Team", on_delete=models.CASCADE, related_name="quota_requests")
    instance_type = models.ForeignKey("quotas.InstanceType", on_delete=models.PROTECT, related_name="+")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    instances = models.PositiveIntegerField(null=True, blank=True)
    accelerators = models.PositiveIntegerField(null=True, blank=True)
    vcpus = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0.0)])
    memory_gib = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0.0)])
    current = models.JSONField(default=dict, blank=True, help_text="the allocation on that type when asked")
    start_on = models.DateField(help_text="from when")
    why = models.CharField(max_length=2000)

    status = models.CharField(max_length=16, choices=RequestStatus.choices, default=RequestStatus.PENDING)
    replay = models.ForeignKey(Replay, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(blank=True, max_length=2000)
    version = models.ForeignKey(
        "quotas.ConfigVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="the allocation version the approval saved",
    )

    objects = QuotaRequestQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"quota request #{self.pk} ({self.team} on {self.instance_type})"

    def get_absolute_url(self):
        return reverse("whatif:request-detail", args=[self.pk])

    def amounts(self) -> dict:
        return {f: getattr(self, f) for f in ALLOCATION_FIELDS if getattr(self, f) is not None}


class RequestEvent(models.Model):
    """One step in a quota request's life: who did what, when, and why."""

    request = models.ForeignKey(QuotaRequest, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=32)
    text = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self):
        return f"request #{self.request_id}: {self.action}"


class Notification(models.Model):
    """A message in the portal for one user (the e-mail's twin), read or not."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    created_at = models.DateTimeField(default=timezone.now)
    text = models.CharField(max_length=300)
    url = models.CharField(max_length=300, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.text


class AdviceKind(models.TextChoices):
    UNDERUSED = "underused", "Quota mostly unused"
    STARVED = "starved", "Quota always exhausted, work waiting, borrowing at its limit"
    UNALLOCATED = "unallocated", "Capacity nobody has quota for"


class Advice(models.Model):
    """One right-sizing proposal from the weekly reading of usage: a quota change for a team on an instance
    type (or a change of inventory), the evidence for it, and the draft that a what-if replay would test."""

    batch = models.DateTimeField(db_index=True, help_text="the weekly run that proposed it")
    kind = models.CharField(max_length=16, choices=AdviceKind.choices)
    team = models.ForeignKey("quotas.Team", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    instance_type = models.ForeignKey("quotas.InstanceType", on_delete=models.CASCADE, related_name="+")
    summary = models.CharField(max_length=300)
    evidence = models.JSONField(default=list, help_text="the numbers behind it, one line each")
    draft = models.JSONField(help_text="the proposal, in the `quotas export` format")
    replay = models.ForeignKey(Replay, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-batch", "kind", "id"]

    def __str__(self):
        return self.summary
