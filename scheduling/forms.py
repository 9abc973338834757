"""The job request form. It only shapes input; scheduling.services.job_submit does the validation that
the API and the command share, and its errors are put back on the form's fields."""

import re

from django import forms
from django.core.exceptions import ValidationError

from quotas.models import InstanceType, PriorityClass, Team
from scheduling.services import JobRequest

DURATION = re.compile(r"^\s*(?:(\d+)\s*d)?\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m)?\s*(?:(\d+)\s*s?)?\s*$", re.I)


def parse_duration(text: str | None) -> int | None:
    """'90' (seconds), '45m', '2h', '1h30m', '1d' -> seconds; '' -> None."""
    if text is None or not str(text).strip():
        return None
    match = DURATION.match(str(text))
    if not match or not any(match.groups()):
        raise ValidationError("write a duration like 45m, 2h, 1h30m or a number of seconds")
    d, h, m, s = (int(g) if g else 0 for g in match.groups())
    return d * 86400 + h * 3600 + m * 60 + s


def format_duration(seconds: int | None) -> str:
    if not seconds:
        return ""
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v) or "0s"


def _accelerators(it) -> str:
    return f"{it.accelerators} {it.accelerator_kind}" if it.accelerators else "no accelerators"


class JobForm(forms.Form):
    team = forms.ChoiceField()
    name = forms.CharField(max_length=63, help_text="lower-case letters, digits and '-', e.g. llama-finetune-3")
    instance_type = forms.ChoiceField(required=False, help_text="or any type your team has quota on")
    accelerators = forms.IntegerField(min_value=0, initial=1, label="Accelerators per pod")
    vcpus = forms.FloatField(
        min_value=0, required=False, label="vCPUs per pod", help_text="blank: the instance type's proportional share"
    )
    memory_gib = forms.FloatField(
        min_value=0, required=False, label="Memory per pod (GiB)", help_text="blank: the proportional share"
    )
    pods = forms.IntegerField(min_value=1, initial=1)
    priority_class = forms.ChoiceField(required=False)
    image = forms.CharField(max_length=255, initial="nvcr.io/nvidia/pytorch:24.05-py3", label="Container image")
    command = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    expected_duration = forms.CharField(
        required=False, max_length=32, help_text="e.g. 45m, 2h, 1h30m; used to estimate start times"
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        teams = Team.objects.visible_to(user) if user.is_portal_admin else user.teams.all()
        self.fields["team"].choices = [(t.name, t.name) for t in teams.order_by("name")]
        self.fields["instance_type"].choices = [("", "Any instance type")] + [
            (it.name, f"{it.name} · {_accelerators(it)}, {it.vcpus} vCPUs")
            for it in InstanceType.objects.order_by("name")
        ]
        self.fields["priority_class"].choices = [("", "None (lowest)")] + [
            (pc.name, f"{pc.name} ({pc.weight})") for pc in PriorityClass.objects.order_by("-weight")
        ]

    def clean_expected_duration(self):
        return parse_duration(self.cleaned_data.get("expected_duration"))

    def to_request(self) -> JobRequest:
        data = self.cleaned_data
        return JobRequest(
            team=data["team"],
            name=data["name"],
            image=data["image"],
            instance_type=data["instance_type"] or None,
            accelerators=data["accelerators"],
            vcpus=data["vcpus"],
            memory_gib=data["memory_gib"],
            pods=data["pods"],
            priority_class=data["priority_class"] or None,
            command=data["command"],
            expected_duration_s=data["expected_duration"],
        )

    def add_service_errors(self, error: ValidationError) -> None:
        fields = {"expected_duration_s": "expected_duration"}
        if hasattr(error, "error_dict"):
            for field, messages in error.message_dict.items():
                name = fields.get(field, field)
                self.add_error(None if name == "__all__" or name not in self.fields else name, messages)
        else:
            self.add_error(None, error.messages)
