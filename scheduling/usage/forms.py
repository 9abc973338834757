"""The one filter form behind the usage pages, the CSV exports and the API: range, team, instance type."""

from django import forms

from quotas.models import InstanceType, Team, validate_year
from scheduling.usage.models import RESOURCES, AlertKind, AlertRule
from scheduling.usage.ranges import DEFAULT_PRESET, MAX_CUSTOM_DAYS, PRESET_LABELS, page_window


class UsageFilterForm(forms.Form):
    range = forms.ChoiceField(choices=list(PRESET_LABELS.items()), required=False, initial=DEFAULT_PRESET)
    start = forms.DateField(required=False, validators=[validate_year], widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, validators=[validate_year], widget=forms.DateInput(attrs={"type": "date"}))
    team = forms.ModelChoiceField(
        queryset=Team.objects.none(), to_field_name="name", required=False, empty_label="All teams"
    )
    instance_type = forms.ModelChoiceField(
        queryset=InstanceType.objects.all(), to_field_name="name", required=False, empty_label="All instance types"
    )
    resource = forms.ChoiceField(choices=list(RESOURCES.items()), required=False, initial="acc")

    def __init__(self, data=None, *, user, **kwargs):
        # An absent field takes its initial value, so a bare URL is a valid 7-day, all-teams request.
        data = data.copy() if data is not None else {}
        super().__init__(data, **kwargs)
        self.user = user
        self.fields["team"].queryset = Team.objects.visible_to(user).order_by("name")

    def clean(self):
        cleaned = super().clean()
        preset = cleaned.get("range") or DEFAULT_PRESET
        cleaned["range"] = preset
        cleaned["resource"] = cleaned.get("resource") or "acc"
        start, end = cleaned.get("start"), cleaned.get("end")
        if "start" in self.errors or "end" in self.errors:
            return cleaned  # the date itself is out of range; its field says why
        if preset == "custom":
            if not start or not end:
                raise forms.ValidationError("A custom range needs both a start and an end date.")
            if start > end:
                raise forms.ValidationError("The start date must not be after the end date.")
            if (end - start).days > MAX_CUSTOM_DAYS:
                raise forms.ValidationError(f"A custom range spans at most {MAX_CUSTOM_DAYS} days.")
        cleaned["window"] = page_window(preset, start=start, end=end)
        return cleaned

    def teams(self):
        """The teams the data covers: the chosen one, else every team the user may see; None means every
        team (a reader with no team chosen), which lets the selectors skip the filter."""
        team = self.cleaned_data.get("team")
        if team:
            return Team.objects.filter(pk=team.pk)
        return None if self.user.sees_all_teams else Team.objects.visible_to(self.user)

    def instance_types(self):
        """The chosen instance type, or None for all of them."""
        it = self.cleaned_data.get("instance_type")
        return InstanceType.objects.filter(pk=it.pk) if it else None

    def cache_key(self, view: str) -> str:
        """Who sees what (all teams, or these teams) and which filters: equal keys mean equal data."""
        scope = (
            "all"
            if self.user.sees_all_teams
            else ",".join(
                str(pk) for pk in Team.objects.visible_to(self.user).order_by("pk").values_list("pk", flat=True)
            )
        )
        c = self.cleaned_data
        parts = [
            view,
            scope,
            c["range"],
            c.get("start"),
            c.get("end"),
            c.get("team") and c["team"].pk,
            c.get("instance_type") and c["instance_type"].pk,
            c["resource"],
            c["window"].end.isoformat(),
        ]
        return "usage:" + ":".join(str(p) for p in parts)

    def query_string(self, **overrides) -> str:
        """The current filters as a query string, e.g. for the CSV links."""
        from urllib.parse import urlencode

        values = {k: self.data.get(k) for k in self.fields if self.data.get(k)}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return urlencode(values)


class AlertRuleForm(forms.ModelForm):
    webhook_url = forms.URLField(
        required=False,
        assume_scheme="https",
        max_length=200,
        help_text="receives a JSON POST when the alert fires or clears",
    )

    class Meta:
        model = AlertRule
        fields = ["team", "kind", "threshold_pct", "minutes", "emails", "webhook_url", "enabled"]
        widgets = {"emails": forms.TextInput(attrs={"placeholder": "oncall@example.com, lead@example.com"})}

    def clean_emails(self):
        from django.core.validators import validate_email

        emails = [e.strip() for e in (self.cleaned_data.get("emails") or "").split(",") if e.strip()]
        for email in emails:
            try:
                validate_email(email)
            except forms.ValidationError as exc:
                raise forms.ValidationError(f"“{email}” is not an email address.") from exc
        return ", ".join(emails)

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("kind")
        pct, minutes = cleaned.get("threshold_pct"), cleaned.get("minutes")
        if kind == AlertKind.USAGE_ABOVE_QUOTA and (pct is None or not minutes):
            raise forms.ValidationError("“Usage above quota” needs a percentage (X) and a number of minutes (Y).")
        if kind == AlertKind.PENDING_TOO_LONG and not minutes:
            raise forms.ValidationError("“Pending too long” needs the minutes a job may wait (Z).")
        if kind == AlertKind.QUOTA_IDLE and pct is None:
            raise forms.ValidationError("“Quota idle” needs a utilization percentage (W).")
        if not cleaned.get("emails") and not cleaned.get("webhook_url"):
            raise forms.ValidationError("Say where to notify: at least one email address or a webhook URL.")
        return cleaned
