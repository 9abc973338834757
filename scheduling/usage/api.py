"""Usage API: the summary and per-job reports, usage series, and alert rules and events.

The reports take the same filters as the pages (range, start, end, team, instance_type) through the same
form, so they see the same teams: all for admins and managers, their own for scientists. `?format=csv`
returns every row as CSV instead of a page of JSON.
"""

import csv
import io

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, permissions, renderers, serializers, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from portal.api import BoundedPagination, RejectUnknownFields
from portal.schema import SingleObjectSchema
from quotas.models import InstanceType, Team
from scheduling.usage import alerts as alert_services
from scheduling.usage import selectors
from scheduling.usage.forms import AlertRuleForm, UsageFilterForm
from scheduling.usage.models import AlertEvent, AlertRule


class CSVRenderer(renderers.BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, dict) and "results" not in data:  # an error: {"field": [...]} or {"detail": ...}
            text = (f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in data.items())
            return "\n".join(text).encode()
        rows = data.get("results", []) if isinstance(data, dict) else data
        out = io.StringIO()
        view = (renderer_context or {}).get("view")
        columns = list(rows[0].keys()) if rows else list(getattr(view, "row_serializer", lambda: {})().fields)
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()  # also for no rows: an empty file would have no Content-Type
        writer.writerows(rows)
        return out.getvalue().encode()


FILTER_PARAMS = [
    OpenApiParameter("range", str, enum=["24h", "7d", "30d", "90d", "custom"], description="default 30d (jobs: 7d)"),
    OpenApiParameter("start", str, description="YYYY-MM-DD, with range=custom"),
    OpenApiParameter("end", str, description="YYYY-MM-DD (inclusive), with range=custom"),
    OpenApiParameter("team", str, description="team name"),
    OpenApiParameter("instance_type", str, description="instance type name"),
]


class SummaryRowSerializer(serializers.Serializer):
    day = serializers.DateField(allow_null=True)
    team = serializers.CharField()
    instance_type = serializers.CharField()
    accelerator_hours = serializers.FloatField()
    within_quota_accelerator_hours = serializers.FloatField()
    borrowed_accelerator_hours = serializers.FloatField()
    quota_accelerator_hours = serializers.FloatField()
    quota_utilization_pct = serializers.FloatField(allow_null=True)
    idle_quota_accelerator_hours = serializers.FloatField()
    vcpu_hours = serializers.FloatField()
    borrowed_vcpu_hours = serializers.FloatField()
    jobs_started = serializers.IntegerField()
    avg_wait_minutes = serializers.FloatField(allow_null=True)
    preemptions = serializers.IntegerField()
    accelerator = serializers.CharField(
        allow_blank=True, help_text="gpu, neuron or empty: hours of different accelerator resources never add up"
    )


class JobReportRowSerializer(serializers.Serializer):
    job_id = serializers.IntegerField()
    name = serializers.CharField()
    team = serializers.CharField()
    user = serializers.CharField()
    priority_class = serializers.CharField()
    instance_type = serializers.CharField()
    accelerators = serializers.IntegerField()
    state = serializers.CharField()
    submitted = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    ended = serializers.DateTimeField(allow_null=True)
    wait_minutes = serializers.FloatField(allow_null=True)
    run_minutes = serializers.FloatField()
    accelerator_hours = serializers.FloatField()
    times_preempted = serializers.IntegerField()


def _filters(request, default_range: str) -> UsageFilterForm:
    data = request.query_params.copy()
    data.pop("format", None)
    data.setdefault("range", default_range)
    form = UsageFilterForm(data, user=request.user)
    if not form.is_valid():
        raise ValidationError({k: list(v) for k, v in form.errors.items()})
    return form


class _ReportViewSet(viewsets.ViewSet):
    renderer_classes = [renderers.JSONRenderer, renderers.BrowsableAPIRenderer, CSVRenderer]
    pagination_class = BoundedPagination  # JSON comes in pages (the schema says so); CSV is the whole list

    def _respond(self, request, rows, serializer_class):
        if request.accepted_renderer.format == "csv":
            return Response(serializer_class(rows, many=True).data)
        paginator = BoundedPagination()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(serializer_class(page, many=True).data)


class UsageSummaryViewSet(_ReportViewSet):
    """Per day x team x instance type (by=period: per team x instance type over the range): accelerator-hours
    used, within quota and borrowed, quota utilization, idle quota hours, vCPU-hours, jobs, wait, preemptions."""

    row_serializer = SummaryRowSerializer

    @extend_schema(
        parameters=[*FILTER_PARAMS, OpenApiParameter("by", str, enum=["day", "period"])],
        responses=SummaryRowSerializer(many=True),
    )
    def list(self, request):
        form = _filters(request, "30d")
        by = request.query_params.get("by", "day")
        if by not in ("day", "period"):
            raise ValidationError({"by": ["use 'day' or 'period'"]})
        rows = selectors.usage_summary(
            window=form.cleaned_data["window"], teams=form.teams(), types=form.instance_types(), by_day=by == "day"
        )
        return self._respond(request, rows, SummaryRowSerializer)


class JobReportViewSet(_ReportViewSet):
    """One row per job submitted in the range: who, what, when, wait, run time, accelerator-hours, preemptions."""

    row_serializer = JobReportRowSerializer

    @extend_schema(parameters=FILTER_PARAMS, responses=JobReportRowSerializer(many=True))
    def list(self, request):
        form = _filters(request, "7d")
        jobs = selectors.job_report_queryset(
            window=form.cleaned_data["window"], teams=form.teams(), types=form.instance_types()
        )
        if request.accepted_renderer.format == "csv":
            return Response(JobReportRowSerializer(list(selectors.job_report_rows(jobs)), many=True).data)
        paginator = BoundedPagination()
        page = paginator.paginate_queryset(jobs, request, view=self)
        rows = list(selectors.job_report_rows(page))
        return paginator.get_paginated_response(JobReportRowSerializer(rows, many=True).data)


class SeriesSerializer(serializers.Serializer):
    x = serializers.ListField(child=serializers.DateTimeField())
    used = serializers.ListField(child=serializers.FloatField())
    borrowed = serializers.ListField(child=serializers.FloatField())
    lent = serializers.ListField(child=serializers.FloatField())
    pending = serializers.ListField(child=serializers.FloatField())
    quota = serializers.ListField(child=serializers.FloatField())
    fair_share = serializers.ListField(child=serializers.FloatField())
    pending_jobs = serializers.ListField(child=serializers.FloatField())
    step = serializers.CharField()
    accelerator = serializers.CharField(
        allow_blank=True, help_text="with resource=acc: gpu or neuron, the one accelerator resource summed (never both)"
    )


class UsageSeriesViewSet(viewsets.ViewSet):
    """Usage over time summed over the chosen teams and instance types, at the range's step
    (raw samples for 24 h, hourly up to 45 days, daily beyond)."""

    schema = SingleObjectSchema()

    @extend_schema(
        parameters=[
            *FILTER_PARAMS,
            OpenApiParameter("resource", str, enum=["acc", "cpu", "mem"]),
            OpenApiParameter(
                "accelerator",
                str,
                enum=list(selectors.ACCELERATORS),
                description="with resource=acc (the default): which accelerator resource; GPUs and Neuron devices "
                "are never added together. Default: the first the instance types in scope have (gpu before neuron)",
            ),
        ],
        responses=SeriesSerializer,
    )
    def list(self, request):
        form = _filters(request, "7d")
        resource = form.cleaned_data["resource"]
        types, accelerator = form.instance_types(), ""
        if resource == "acc":
            facets = {key: facet_types for key, _, facet_types in selectors.resource_facets(types, "acc")}
            accelerator = request.query_params.get("accelerator") or next(iter(facets), "")
            if accelerator and accelerator not in selectors.ACCELERATORS:
                raise ValidationError({"accelerator": [f"choose one of {', '.join(selectors.ACCELERATORS)}"]})
            types = facets.get(accelerator, InstanceType.objects.none())  # none in scope: zeros, not a sum
        window = form.cleaned_data["window"]
        data = selectors.team_series(window=window, teams=form.teams(), types=types, resource=resource)
        step = window.step
        return Response(SeriesSerializer({**data, "step": step, "accelerator": accelerator}).data)


# ---- alerts ----------------------------------------------------------------------------------------------------


class AdminWritesManagerReads(permissions.BasePermission):
    message = "Alerts are set by admins and read by managers."

    def has_permission(self, request, view):
        user = request.user
        if not user.is_authenticated or not user.sees_all_teams:
            return False
        return request.method in permissions.SAFE_METHODS or user.is_portal_admin


class AlertRuleSerializer(RejectUnknownFields, serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all())

    class Meta:
        model = AlertRule
        fields = ["id", "team", "kind", "threshold_pct", "minutes", "emails", "webhook_url", "enabled", "created_at"]
        read_only_fields = ["id", "created_at"]

    def validate(self, attrs):
        merged = {f: getattr(self.instance, f) for f in AlertRuleForm.Meta.fields} if self.instance else {}
        merged.update(attrs)
        form = AlertRuleForm(
            {k: v.pk if isinstance(v, Team) else ("" if v is None else v) for k, v in merged.items()},
            instance=self.instance,
        )
        if not form.is_valid():
            raise serializers.ValidationError({k: list(v) for k, v in form.errors.items()})
        return form.cleaned_data


class AlertRuleViewSet(viewsets.ModelViewSet):
    serializer_class = AlertRuleSerializer
    permission_classes = [AdminWritesManagerReads]
    queryset = AlertRule.objects.select_related("team")

    def perform_create(self, serializer):
        serializer.instance = alert_services.alert_rule_create(data=serializer.validated_data, by=self.request.user)

    def perform_update(self, serializer):
        alert_services.alert_rule_update(rule=serializer.instance, data=serializer.validated_data, by=self.request.user)

    def perform_destroy(self, instance):
        alert_services.alert_rule_delete(rule=instance, by=self.request.user)


class AlertEventSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name")
    rule = serializers.CharField(source="rule.describe")
    active = serializers.BooleanField()

    class Meta:
        model = AlertEvent
        fields = ["id", "team", "rule", "rule_id", "fired_at", "resolved_at", "active", "value", "message"]


class AlertEventViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = AlertEventSerializer
    permission_classes = [AdminWritesManagerReads]
    queryset = AlertEvent.objects.select_related("rule", "team")
    filterset_fields = ["team__name", "rule"]


def register(router):
    router.register("usage/summary", UsageSummaryViewSet, basename="usage-summary")
    router.register("usage/jobs", JobReportViewSet, basename="usage-jobs")
    router.register("usage/series", UsageSeriesViewSet, basename="usage-series")
    router.register("alert-rules", AlertRuleViewSet, basename="alert-rule")
    router.register("alert-events", AlertEventViewSet, basename="alert-event")
