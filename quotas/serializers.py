"""API shapes. Input serializers only parse; the rules are the models' validators, run by the services."""

from rest_framework import serializers

from quotas.models import (
    Backfill,
    ClusterPolicy,
    ComputeAllocation,
    ConfigVersion,
    IdleCompute,
    InstanceType,
    NodeGroup,
    PreemptTeamTasks,
    PriorityClass,
    Sharing,
    TaskPrioritization,
    Team,
    User,
)


class InstanceTypeSerializer(serializers.ModelSerializer):
    nodes = serializers.IntegerField(read_only=True, help_text="nodes of this type in all node groups")
    capacity = serializers.SerializerMethodField(help_text="resources of one instance, in the engine's names")

    class Meta:
        model = InstanceType
        fields = [
            "id",
            "name",
            "family",
            "accelerator_kind",
            "accelerator_resource",
            "accelerators",
            "vcpus",
            "memory_gib",
            "efa_interfaces",
            "nodes",
            "capacity",
        ]

    def get_capacity(self, obj) -> dict[str, float]:
        return obj.capacity()


class NodeGroupSerializer(serializers.ModelSerializer):
    instance_type = serializers.SlugRelatedField(slug_field="name", queryset=InstanceType.objects.all())

    class Meta:
        model = NodeGroup
        fields = ["id", "name", "instance_type", "node_count"]


class PriorityClassSerializer(serializers.ModelSerializer):
    class Meta:
        model = PriorityClass
        fields = ["id", "name", "weight", "description"]


class ReasonMixin(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=300, write_only=True)


class ClusterPolicySerializer(ReasonMixin, serializers.ModelSerializer):
    class Meta:
        model = ClusterPolicy
        fields = ["task_prioritization", "idle_compute", "backfill", "updated_at", "reason"]
        read_only_fields = ["updated_at"]


class ClusterPolicyInputSerializer(ReasonMixin):
    task_prioritization = serializers.ChoiceField(choices=TaskPrioritization.choices, required=False)
    idle_compute = serializers.ChoiceField(choices=IdleCompute.choices, required=False)
    backfill = serializers.ChoiceField(choices=Backfill.choices, required=False)


class AllocationSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="name", read_only=True)
    instance_type = serializers.SlugRelatedField(slug_field="name", read_only=True)
    resolved = serializers.SerializerMethodField(help_text="nominal quota per resource, defaults filled in")
    sources = serializers.SerializerMethodField(help_text='per field: "set" by an admin or "default"')

    class Meta:
        model = ComputeAllocation
        fields = [
            "id",
            "team",
            "instance_type",
            "instances",
            "accelerators",
            "vcpus",
            "memory_gib",
            "resolved",
            "sources",
        ]

    def get_resolved(self, obj) -> dict[str, float]:
        return obj.resolved()

    def get_sources(self, obj) -> dict[str, str]:
        return {
            f: "set" if getattr(obj, f) is not None else "default"
            for f in ("instances", "accelerators", "vcpus", "memory_gib")
        }


class AllocationAmountsSerializer(serializers.Serializer):
    """Amounts on one instance type: whole instances, or any of accelerators / vCPUs / memory (GiB).
    Leave a resource out (or null) for its proportional default."""

    instances = serializers.IntegerField(min_value=0, required=False, allow_null=True)
    accelerators = serializers.IntegerField(min_value=0, required=False, allow_null=True)
    vcpus = serializers.FloatField(min_value=0, required=False, allow_null=True)
    memory_gib = serializers.FloatField(min_value=0, required=False, allow_null=True)


class AllocationInputSerializer(ReasonMixin, AllocationAmountsSerializer):
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all())
    instance_type = serializers.SlugRelatedField(slug_field="name", queryset=InstanceType.objects.all())


class AllocationUpdateSerializer(ReasonMixin, AllocationAmountsSerializer):
    pass


class TeamAllocationsInputSerializer(ReasonMixin):
    allocations = serializers.DictField(
        child=AllocationAmountsSerializer(),
        help_text="instance type name -> amounts; instance types left out lose their allocation",
    )


class TeamSerializer(serializers.ModelSerializer):
    members = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)
    allocations = AllocationSerializer(many=True, read_only=True)

    class Meta:
        model = Team
        fields = [
            "id",
            "name",
            "namespace",
            "description",
            "cohort",
            "fair_share_weight",
            "sharing",
            "borrow_limit_pct",
            "preempt_team_tasks",
            "members",
            "allocations",
            "created_at",
        ]


class TeamInputSerializer(ReasonMixin):
    name = serializers.CharField(max_length=63)
    namespace = serializers.CharField(max_length=63)
    description = serializers.CharField(max_length=200, required=False, allow_blank=True)
    cohort = serializers.CharField(max_length=63, required=False)
    fair_share_weight = serializers.FloatField(required=False)
    sharing = serializers.ChoiceField(choices=Sharing.choices, required=False)
    borrow_limit_pct = serializers.FloatField(required=False, allow_null=True)
    preempt_team_tasks = serializers.ChoiceField(choices=PreemptTeamTasks.choices, required=False)
    members = serializers.SlugRelatedField(
        slug_field="username", many=True, queryset=User.objects.all(), required=False
    )


class TeamStatusSerializer(serializers.Serializer):
    """Where the team stands now; every mapping is [instance type][resource] -> amount."""

    quota = serializers.DictField()
    borrowing_limit = serializers.DictField(allow_null=True)
    usage = serializers.DictField()
    borrowed = serializers.DictField()
    lent = serializers.DictField()
    fair_share = serializers.DictField()
    pending = serializers.IntegerField()


class ConfigVersionSerializer(serializers.ModelSerializer):
    author = serializers.SlugRelatedField(slug_field="username", read_only=True)
    team = serializers.SlugRelatedField(slug_field="name", read_only=True)
    reverted_from = serializers.SlugRelatedField(slug_field="number", read_only=True)

    class Meta:
        model = ConfigVersion
        fields = [
            "id",
            "scope",
            "team",
            "number",
            "created_at",
            "author",
            "reason",
            "changes",
            "reverted_from",
            "snapshot",
        ]


class RevertInputSerializer(ReasonMixin):
    version = serializers.IntegerField(min_value=1, help_text="the version number to restore")
