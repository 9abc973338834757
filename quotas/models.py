"""Who may use what: users and their roles, the cluster's inventory, teams, allocations and policy."""

import hashlib
import math
import secrets

from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

# A Kubernetes namespace is an RFC 1123 DNS label.
k8s_name_validator = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "must be a valid Kubernetes name: lower-case letters, digits and '-', starting and ending with a "
    "letter or digit, at most 63 characters",
)


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    MANAGER = "manager", "Manager"
    SCIENTIST = "scientist", "Data scientist"


class User(AbstractUser):
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.SCIENTIST)

    @property
    def is_portal_admin(self) -> bool:
        return self.is_superuser or self.role == Role.ADMIN

    @property
    def is_manager(self) -> bool:
        return self.role == Role.MANAGER

    @property
    def is_scientist(self) -> bool:
        return self.role == Role.SCIENTIST and not self.is_superuser

    @property
    def sees_all_teams(self) -> bool:
        """Admins and managers read every team; scientists only their own."""
        return self.is_portal_admin or self.is_manager

    @property
    def role_label(self) -> str:
        return "Admin" if self.is_portal_admin else Role(self.role).label


class ApiTokenQuerySet(models.QuerySet):
    def authenticate(self, raw_key: str):
        return self.select_related("user").filter(key_hash=ApiToken.hash(raw_key), user__is_active=True).first()


class ApiToken(models.Model):
    """A personal API token. Only a hash is stored; the key is shown once, when it is created."""

    user = models.ForeignKey("quotas.User", on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=8, help_text="first characters of the key, to tell tokens apart")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def hash(raw_key: str) -> str:
        return hashlib.sha256(raw_key.encode()).hexdigest()

    @classmethod
    def issue(cls, *, user, name: str) -> tuple["ApiToken", str]:
        raw = "gqp_" + secrets.token_urlsafe(32)
        token = cls.objects.create(user=user, name=name, prefix=raw[:8], key_hash=cls.hash(raw))
        return token, raw


class AcceleratorResource(models.TextChoices):
    NONE = "", "None"
    GPU = "gpu", "GPU (nvidia.com/gpu)"
    NEURON = "neuron", "Neuron device (aws.amazon.com/neurondevice)"


class InstanceType(models.Model):
    name = models.CharField(max_length=64, unique=True, help_text="e.g. ml.p5.48xlarge")
    family = models.CharField(max_length=32, blank=True, help_text="e.g. p5")
    accelerator_kind = models.CharField(
        max_length=64, blank=True, help_text="the accelerator model, e.g. NVIDIA H100 or AWS Trainium"
    )
    accelerator_resource = models.CharField(
        max_length=16, choices=AcceleratorResource.choices, blank=True, default=AcceleratorResource.NONE
    )
    accelerators = models.PositiveIntegerField(default=0, help_text="accelerators per instance")
    vcpus = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    memory_gib = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    efa_interfaces = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def clean(self):
        if self.accelerators and not self.accelerator_resource:
            raise ValidationError({"accelerator_resource": "say which kind of accelerator this type has"})
        if self.accelerator_resource and not self.accelerators:
            raise ValidationError({"accelerators": "an accelerator kind needs at least one accelerator"})

    @property
    def accelerator_key(self) -> str:
        """The engine's resource name for this type's accelerators ('gpu', 'neuron' or '')."""
        return self.accelerator_resource or ""

    def capacity(self) -> dict[str, float]:
        """Resources of one instance, in the engine's resource names."""
        cap: dict[str, float] = {}
        if self.accelerator_key and self.accelerators:
            cap[self.accelerator_key] = self.accelerators
        cap["cpu"] = self.vcpus
        cap["memory"] = self.memory_gib
        return cap


class NodeGroup(models.Model):
    """A group of identical nodes: the cluster's capacity of one instance type."""

    name = models.CharField(max_length=64, unique=True)
    instance_type = models.ForeignKey(InstanceType, on_delete=models.PROTECT, related_name="node_groups")
    node_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["instance_type__name", "name"]

    def __str__(self):
        return f"{self.name} ({self.node_count} x {self.instance_type})"


class Sharing(models.TextChoices):
    DONT_LEND = "DontLend", "Don't lend, don't borrow"
    LEND = "Lend", "Lend idle quota"
    LEND_AND_BORROW = "LendAndBorrow", "Lend and borrow"


class PreemptTeamTasks(models.TextChoices):
    NEVER = "Never", "Never"
    LOWER_PRIORITY = "LowerPriority", "Lower-priority tasks of the team"


class TeamQuerySet(models.QuerySet):
    def visible_to(self, user):
        """The one visibility rule for teams: admins and managers see all, scientists their own."""
        if not user.is_authenticated:
            return self.none()
        if user.sees_all_teams:
            return self
        return self.filter(members=user)


class Team(models.Model):
    name = models.CharField(max_length=63, unique=True, validators=[k8s_name_validator])
    namespace = models.CharField(
        max_length=63,
        unique=True,
        validators=[k8s_name_validator],
        help_text="the Kubernetes namespace the team's jobs run in",
    )
    description = models.CharField(max_length=200, blank=True)
    cohort = models.CharField(
        max_length=63,
        default="default",
        validators=[k8s_name_validator],
        help_text="teams in one cohort lend each other idle quota",
    )
    fair_share_weight = models.FloatField(default=1.0, validators=[MinValueValidator(0.0)])
    sharing = models.CharField(max_length=16, choices=Sharing.choices, default=Sharing.LEND_AND_BORROW)
    borrow_limit_pct = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0)],
        help_text="cap on borrowing, as % of the nominal quota per resource; empty = no cap",
    )
    preempt_team_tasks = models.CharField(
        max_length=16, choices=PreemptTeamTasks.choices, default=PreemptTeamTasks.NEVER
    )
    members = models.ManyToManyField("quotas.User", related_name="teams", blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def clean(self):
        _require_finite(self, ["fair_share_weight", "borrow_limit_pct"])


def _require_finite(obj, fields):
    errors = {}
    for name in fields:
        value = getattr(obj, name)
        if isinstance(value, float) and not math.isfinite(value):
            errors[name] = "must be a finite number"
    if errors:
        raise ValidationError(errors)


class ComputeAllocation(models.Model):
    """A team's nominal quota on one instance type: whole instances, or accelerators / vCPUs / memory.

    An empty resource field means "the proportional default": it follows the accelerators (or vCPUs)
    in the instance type's own proportions, computed by the engine's one function.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="allocations")
    instance_type = models.ForeignKey(InstanceType, on_delete=models.PROTECT, related_name="allocations")
    instances = models.PositiveIntegerField(null=True, blank=True)
    accelerators = models.PositiveIntegerField(null=True, blank=True)
    vcpus = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0.0)])
    memory_gib = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0.0)])

    class Meta:
        ordering = ["team__name", "instance_type__name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "instance_type"], name="one_allocation_per_team_and_type"),
            models.CheckConstraint(
                condition=Q(instances__isnull=True)
                | (Q(accelerators__isnull=True) & Q(vcpus__isnull=True) & Q(memory_gib__isnull=True)),
                name="allocation_is_instances_or_resources",
            ),
        ]

    def __str__(self):
        return f"{self.team} on {self.instance_type}"

    def clean(self):
        _require_finite(self, ["vcpus", "memory_gib"])
        if self.instances is not None and any(v is not None for v in (self.accelerators, self.vcpus, self.memory_gib)):
            raise ValidationError("give either whole instances or accelerators / vCPUs / memory, not both")
        it = self.instance_type if self.instance_type_id else None
        if it is not None and self.accelerators and not it.accelerator_key:
            raise ValidationError({"accelerators": f"{it.name} has no accelerators"})

    def given(self) -> dict:
        """What the admin set, in the engine's quota-entry form."""
        if self.instances is not None:
            return {"count": self.instances}
        it = self.instance_type
        entry: dict[str, float] = {}
        if self.accelerators is not None and it.accelerator_key:
            entry[it.accelerator_key] = self.accelerators
        if self.vcpus is not None:
            entry["cpu"] = self.vcpus
        if self.memory_gib is not None:
            entry["memory"] = self.memory_gib
        return entry

    def resolved(self) -> dict[str, float]:
        """The nominal quota per resource, proportional defaults filled in."""
        capacity = self.instance_type.capacity()
        given = self.given()
        if "count" in given:
            return {k: v * given["count"] for k, v in capacity.items()}
        if not given:
            return {k: 0 for k in capacity}
        # The one proportional-default rule is the engine's (a pure library, no Django).
        from scheduling.engine import proportional_defaults

        return proportional_defaults(capacity, given)


class TaskPrioritization(models.TextChoices):
    FCFS = "fcfs", "First come, first served"
    TASK_RANKING = "task-ranking", "Task ranking (priority, then submit time)"


class IdleCompute(models.TextChoices):
    FAIR_SHARE = "fair-share", "Fair share (by weight)"
    FCFS = "fcfs", "First come, first served"


class Backfill(models.TextChoices):
    RESERVE = "reserve", "Reserve (nobody starves)"
    NONE = "none", "None (best-effort FIFO)"


class ClusterPolicy(models.Model):
    """Cluster-wide scheduling policy: one row."""

    task_prioritization = models.CharField(
        max_length=16, choices=TaskPrioritization.choices, default=TaskPrioritization.FCFS
    )
    idle_compute = models.CharField(max_length=16, choices=IdleCompute.choices, default=IdleCompute.FAIR_SHARE)
    backfill = models.CharField(
        max_length=16,
        choices=Backfill.choices,
        default=Backfill.RESERVE,
        help_text="reserve: the head of each team's queue holds a reservation that smaller work may not delay",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "cluster policy"

    def __str__(self):
        return f"{self.get_task_prioritization_display()}; idle compute {self.get_idle_compute_display()}"

    @classmethod
    def load(cls) -> "ClusterPolicy":
        policy, _ = cls.objects.get_or_create(pk=1)
        return policy


class PriorityClass(models.Model):
    """A named priority. A job without one gets the lowest priority of all."""

    name = models.CharField(max_length=63, unique=True, validators=[k8s_name_validator])
    weight = models.IntegerField(help_text="higher runs first and may preempt lower")
    description = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-weight", "name"]
        verbose_name_plural = "priority classes"

    def __str__(self):
        return f"{self.name} ({self.weight})"


class VersionScope(models.TextChoices):
    TEAM = "team", "Team"
    CLUSTER = "cluster", "Cluster policy"


class ConfigVersion(models.Model):
    """One saved state of a team's configuration (policy, members, allocations) or of the cluster policy.

    Every change writes a new version in the same transaction, with a full JSON snapshot and a readable
    diff against the previous version of the same subject; reverting applies an old snapshot as a new
    version.
    """

    scope = models.CharField(max_length=16, choices=VersionScope.choices)
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField(help_text="1, 2, 3… per team (or for the cluster policy)")
    snapshot = models.JSONField()
    changes = models.JSONField(default=list, help_text="readable differences from the previous version")
    reason = models.CharField(max_length=300, blank=True)
    author = models.ForeignKey(
        "quotas.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="config_versions"
    )
    reverted_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="the version restored"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["team", "number"], name="one_version_number_per_team"),
            models.UniqueConstraint(
                fields=["number"], condition=Q(scope="cluster"), name="one_version_number_for_cluster"
            ),
            models.CheckConstraint(
                condition=(Q(scope="team") & Q(team__isnull=False)) | (Q(scope="cluster") & Q(team__isnull=True)),
                name="version_scope_matches_team",
            ),
        ]

    def __str__(self):
        subject = self.team.name if self.team_id else "cluster policy"
        return f"{subject} v{self.number}"

    @property
    def summary(self) -> str:
        return "; ".join(self.changes) if self.changes else "no change"
