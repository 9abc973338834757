"""One FilterSet for job lists: the page, its CSV export and the API all filter the same way."""

import django_filters
from django import forms

from quotas.models import Team, validate_year
from scheduling.models import Job, JobState


def visible_teams(request):
    if request is None:
        return Team.objects.none()
    return Team.objects.visible_to(request.user).order_by("name")


class JobFilter(django_filters.FilterSet):
    mine = django_filters.BooleanFilter(method="filter_mine", label="Only my jobs", widget=forms.CheckboxInput)
    team = django_filters.ModelChoiceFilter(queryset=visible_teams, to_field_name="name", empty_label="All my teams")
    state = django_filters.MultipleChoiceFilter(choices=JobState.choices, widget=forms.CheckboxSelectMultiple)
    user = django_filters.CharFilter(field_name="submitted_by__username", label="Submitted by")
    name = django_filters.CharFilter(lookup_expr="icontains", label="Name contains")
    submitted_after = django_filters.DateFilter(
        field_name="submitted_at",
        lookup_expr="date__gte",
        validators=[validate_year],
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    submitted_before = django_filters.DateFilter(
        field_name="submitted_at",
        lookup_expr="date__lte",
        validators=[validate_year],
        widget=forms.DateInput(attrs={"type": "date"}),
    )

    class Meta:
        model = Job
        fields = ["mine", "team", "state", "user", "name", "submitted_after", "submitted_before"]

    def filter_mine(self, queryset, name, value):
        if value and self.request is not None:
            return queryset.filter(submitted_by=self.request.user)
        return queryset
