"""API shapes for jobs: what a scientist may send (JobSubmitSerializer) differs from what they see."""

from rest_framework import serializers

from scheduling.models import AdmissionRun, Job, JobEvent


class JobSubmitSerializer(serializers.Serializer):
    team = serializers.CharField(max_length=63)
    name = serializers.CharField(max_length=63)
    image = serializers.CharField(max_length=255)
    instance_type = serializers.CharField(
        max_length=64,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="omit or null: any type the team has quota on",
    )
    accelerators = serializers.IntegerField(min_value=0, default=0, help_text="per pod")
    vcpus = serializers.FloatField(
        min_value=0,
        required=False,
        allow_null=True,
        default=None,
        help_text="per pod; omit for the proportional default",
    )
    memory_gib = serializers.FloatField(
        min_value=0,
        required=False,
        allow_null=True,
        default=None,
        help_text="per pod; omit for the proportional default",
    )
    pods = serializers.IntegerField(min_value=1, default=1)
    priority_class = serializers.CharField(max_length=63, required=False, allow_null=True, allow_blank=True)
    command = serializers.CharField(required=False, allow_blank=True, default="")
    expected_duration_s = serializers.IntegerField(min_value=1, required=False, allow_null=True)


class JobEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobEvent
        fields = ["at", "from_state", "to_state", "reason"]


class JobSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name")
    submitted_by = serializers.CharField(source="submitted_by.username")
    instance_type = serializers.CharField(source="instance_type.name", default=None)
    assigned_instance_type = serializers.CharField(source="assigned_instance_type.name", default=None)
    priority_class = serializers.CharField(source="priority_class.name", default=None)
    url = serializers.HyperlinkedIdentityField(view_name="job-detail")

    class Meta:
        model = Job
        fields = [
            "id", "url", "name", "team", "submitted_by", "state", "reason", "instance_type", "accelerators", "vcpus",
            "memory_gib", "pods", "priority_class", "image", "command", "expected_duration_s", "submitted_at",
            "admitted_at", "started_at", "finished_at", "assigned_instance_type", "placement", "borrowed",
            "preemption_count", "cloned_from",
        ]  # fmt: skip
        read_only_fields = fields


class JobDetailSerializer(JobSerializer):
    events = JobEventSerializer(many=True, read_only=True)
    queue_position = serializers.SerializerMethodField()
    estimated_start = serializers.SerializerMethodField()

    class Meta(JobSerializer.Meta):
        fields = JobSerializer.Meta.fields + ["events", "queue_position", "estimated_start"]
        read_only_fields = fields

    def _plan(self, job):
        from scheduling.selectors import job_plan

        cache = self.context.setdefault("_plans", {})
        if job.pk not in cache:
            cache[job.pk] = job_plan(job)
        return cache[job.pk]

    def get_queue_position(self, job) -> dict | None:
        place = self._plan(job).place
        return place.__dict__ if place else None

    def get_estimated_start(self, job) -> dict | None:
        """From the engine's plan: kind "reserved" (a team's head: its reservation) or "estimate"."""
        e = self._plan(job).estimate
        if e is None:
            return None
        return {"at": e.at, "kind": e.kind, "waits_for": e.waits_for, "note": e.note, "method": e.method}


class AdmissionRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = AdmissionRun
        fields = ["id", "started_at", "duration_ms", "trigger", "admitted", "preempted", "pending", "error"]
        read_only_fields = fields
