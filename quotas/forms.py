"""Forms only parse and display; the rules are the models' validators, applied by the services' full_clean."""

from django import forms
from django.core.exceptions import ValidationError

from quotas.models import ClusterPolicy, InstanceType, NodeGroup, PriorityClass, Team, User

REASON_WIDGET = forms.TextInput(attrs={"placeholder": "why (optional, shown in the history)"})


def apply_service_errors(form, exc: ValidationError):
    """Show a service's ValidationError on the form: per field where the field exists, else on top."""
    if hasattr(exc, "error_dict"):
        for field, messages in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, messages)
    else:
        form.add_error(None, exc.messages)


class TeamForm(forms.ModelForm):
    members = forms.ModelMultipleChoiceField(
        queryset=User.objects.order_by("username"),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 8}),
        help_text="hold Ctrl (⌘) to pick several",
    )
    reason = forms.CharField(required=False, max_length=300, widget=REASON_WIDGET)

    class Meta:
        model = Team
        fields = [
            "name",
            "namespace",
            "description",
            "cohort",
            "fair_share_weight",
            "sharing",
            "borrow_limit_pct",
            "preempt_team_tasks",
        ]
        labels = {
            "fair_share_weight": "Fair-share weight",
            "borrow_limit_pct": "Borrow limit (%)",
            "preempt_team_tasks": "Preempt own lower-priority tasks",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["members"].initial = list(self.instance.members.all())

    def service_fields(self) -> dict:
        return {f: self.cleaned_data[f] for f in self.Meta.fields}


class AllocationRowForm(forms.Form):
    """One instance type's row in the allocation editor. A resource whose *_src is "default" is not set:
    the proportional default fills it, so only "set" values are stored."""

    instances = forms.IntegerField(required=False, min_value=0)
    accelerators = forms.IntegerField(required=False, min_value=0)
    vcpus = forms.FloatField(required=False, min_value=0)
    memory_gib = forms.FloatField(required=False, min_value=0)
    accelerators_src = forms.ChoiceField(choices=[("set", "set"), ("default", "default")], required=False)
    vcpus_src = forms.ChoiceField(choices=[("set", "set"), ("default", "default")], required=False)
    memory_gib_src = forms.ChoiceField(choices=[("set", "set"), ("default", "default")], required=False)

    RESOURCE_FIELDS = ("accelerators", "vcpus", "memory_gib")

    def __init__(self, *args, instance_type: InstanceType, **kwargs):
        self.instance_type = instance_type
        super().__init__(*args, prefix=f"t{instance_type.pk}", **kwargs)

    def clean(self):
        data = super().clean()
        if self.instance_type.accelerator_key == "" and self.is_set(data, "accelerators") and data.get("accelerators"):
            self.add_error("accelerators", f"{self.instance_type.name} has no accelerators")
        return data

    @staticmethod
    def is_set(data, field) -> bool:
        return data.get(f"{field}_src") == "set" and data.get(field) is not None

    def allocation(self) -> dict | None:
        """The values to store: None for an empty row (no allocation on this type)."""
        data = self.cleaned_data
        values = {"instances": data.get("instances")}
        for field in self.RESOURCE_FIELDS:
            values[field] = data.get(field) if self.is_set(data, field) else None
        if values["instances"] is not None:
            # Whole instances win: the resource inputs only showed what the count gives.
            values.update(accelerators=None, vcpus=None, memory_gib=None)
        return values if any(v is not None for v in values.values()) else None


class ReasonForm(forms.Form):
    reason = forms.CharField(required=False, max_length=300, widget=REASON_WIDGET)


class InstanceTypeForm(forms.ModelForm):
    class Meta:
        model = InstanceType
        fields = [
            "name",
            "family",
            "accelerator_kind",
            "accelerator_resource",
            "accelerators",
            "vcpus",
            "memory_gib",
            "efa_interfaces",
        ]
        labels = {"memory_gib": "Memory (GiB)", "vcpus": "vCPUs", "efa_interfaces": "EFA interfaces"}


class NodeGroupForm(forms.ModelForm):
    class Meta:
        model = NodeGroup
        fields = ["name", "instance_type", "node_count"]


class ClusterPolicyForm(forms.ModelForm):
    reason = forms.CharField(required=False, max_length=300, widget=REASON_WIDGET)

    class Meta:
        model = ClusterPolicy
        fields = ["task_prioritization", "idle_compute", "backfill"]
        widgets = {
            "task_prioritization": forms.RadioSelect,
            "idle_compute": forms.RadioSelect,
            "backfill": forms.RadioSelect,
        }


class PriorityClassForm(forms.ModelForm):
    class Meta:
        model = PriorityClass
        fields = ["name", "weight", "description"]
