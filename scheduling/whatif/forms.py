"""Forms for the what-if pages: they parse and display; the rules are in the services."""

from django import forms

from quotas.models import InstanceType, Team
from scheduling.whatif.models import MAX_WINDOW_DAYS


class ReplayForm(forms.Form):
    title = forms.CharField(required=False, max_length=200, help_text="empty: named after its first change")
    window_days = forms.IntegerField(
        min_value=1,
        max_value=MAX_WINDOW_DAYS,
        initial=7,
        help_text="replay the jobs submitted in the last N days (7 or 30, up to 90)",
    )
    draft = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 24, "spellcheck": "false", "class": "mono"}),
        help_text="the `quotas export` format; sections you leave out stay as they are",
    )


class DecisionForm(forms.Form):
    reason = forms.CharField(
        required=False,
        max_length=250,
        widget=forms.TextInput(attrs={"placeholder": "why (recorded in the history with a link to this replay)"}),
    )


class AmountsForm(forms.Form):
    """The allocation fields of a request; their bounds are the allocation model's validators (services)."""

    accelerators = forms.IntegerField(required=False, min_value=0, help_text="accelerators (GPUs or Neuron devices)")
    instances = forms.IntegerField(required=False, min_value=0, help_text="or whole instances")
    vcpus = forms.FloatField(required=False, min_value=0, help_text="empty: in proportion")
    memory_gib = forms.FloatField(required=False, min_value=0, help_text="empty: in proportion")

    def amounts(self) -> dict:
        return {k: v for k, v in self.cleaned_data.items() if k in AMOUNT_FIELDS and v is not None}


AMOUNT_FIELDS = ("accelerators", "instances", "vcpus", "memory_gib")


class QuotaRequestForm(AmountsForm):
    team = forms.ModelChoiceField(queryset=Team.objects.none())
    instance_type = forms.ModelChoiceField(queryset=InstanceType.objects.order_by("name"))
    start_on = forms.DateField(widget=forms.DateInput(attrs={"type": "date"}), help_text="from when")
    why = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="what the team will run, and what happens without it",
    )

    field_order = ["team", "instance_type", "accelerators", "instances", "vcpus", "memory_gib", "start_on", "why"]

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        teams = Team.objects.order_by("name")
        self.fields["team"].queryset = teams if user.is_portal_admin else teams.filter(members=user)


class ChangeForm(AmountsForm):
    reason = forms.CharField(required=False, max_length=2000)
