"""Forms for the what-if pages: they parse and display; the rules are in the services."""

from django import forms

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
