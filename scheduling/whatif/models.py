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
    decision_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"replay #{self.pk}: {self.title}"

    def get_absolute_url(self):
        return reverse("whatif:replay-detail", args=[self.pk])

    @property
    def finished(self) -> bool:
        return self.status in (ReplayStatus.DONE, ReplayStatus.FAILED)
