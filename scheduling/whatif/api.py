"""REST API for deciding with evidence: the fair share explained, what-if replays."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from quotas.models import InstanceType, Team
from scheduling.whatif import requests as quota_requests
from scheduling.whatif import services
from scheduling.whatif.fairshare import fair_share_explained
from scheduling.whatif.models import MAX_WINDOW_DAYS, QuotaRequest, Replay
from scheduling.whatif.selectors import replays_visible_to


class StepSerializer(serializers.Serializer):
    text = serializers.CharField()
    kind = serializers.CharField()
    team = serializers.CharField(allow_null=True)


class DerivationSerializer(serializers.Serializer):
    instance_type = serializers.CharField()
    resource = serializers.CharField()
    fair_share = serializers.FloatField()
    steps = StepSerializer(many=True)


class TeamFairShareView(APIView):
    """How each of the team's fair-share numbers comes about, step by step (the engine's own trace)."""

    @extend_schema(
        responses=inline_serializer(
            "TeamFairShare", {"team": serializers.CharField(), "derivations": DerivationSerializer(many=True)}
        )
    )
    def get(self, request, pk):
        team = get_object_or_404(Team.objects.visible_to(request.user), pk=pk)
        derivations = fair_share_explained(team, user=request.user)
        return Response({"team": team.name, "derivations": DerivationSerializer(derivations, many=True).data})


# --- what-if replays ----------------------------------------------------------------------------------


class IsReader(permissions.BasePermission):
    """Replays show every team: admins and managers read them; only admins create and decide."""

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_authenticated and user.sees_all_teams):
            return False
        return request.method in permissions.SAFE_METHODS or user.is_portal_admin


class ReplaySerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Replay
        fields = [
            "id",
            "url",
            "title",
            "created_by",
            "created_at",
            "draft",
            "changes",
            "window_days",
            "window_start",
            "window_end",
            "status",
            "progress",
            "message",
            "results",
            "started_at",
            "finished_at",
            "decision",
            "decided_by",
            "decided_at",
            "decision_reason",
        ]
        read_only_fields = fields

    def get_url(self, obj) -> str:
        request = self.context.get("request")
        path = obj.get_absolute_url()
        return request.build_absolute_uri(path) if request else path


class ReplayCreateSerializer(serializers.Serializer):
    draft = serializers.JSONField(required=False, help_text="the `quotas export` format, as an object or YAML text")
    window_days = serializers.IntegerField(min_value=1, max_value=MAX_WINDOW_DAYS, default=7)
    title = serializers.CharField(required=False, allow_blank=True, max_length=200)


class DecisionSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=250)


def _validation(exc: ValidationError) -> serializers.ValidationError:
    return serializers.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages})


class ReplayViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """What-if replays: a draft configuration replayed over a window of real history, beside what happened.
    POST creates one and queues its run (poll `status` and `progress`); save applies the draft as the
    configuration (normal versions whose reason names the replay); discard throws it away."""

    serializer_class = ReplaySerializer
    permission_classes = [IsReader]
    filterset_fields = ["status", "decision"]

    def get_queryset(self):
        return replays_visible_to(self.request.user)

    @extend_schema(request=ReplayCreateSerializer, responses={201: ReplaySerializer})
    def create(self, request):
        incoming = ReplayCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        draft = incoming.validated_data.get("draft") or {}
        try:
            if isinstance(draft, str):
                draft = services.draft_parse(draft)
            replay = services.replay_create(
                user=request.user,
                draft=draft,
                title=incoming.validated_data.get("title", ""),
                window_days=incoming.validated_data["window_days"],
            )
        except ValidationError as exc:
            raise _validation(exc) from None
        return Response(self.get_serializer(replay).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=DecisionSerializer, responses=ReplaySerializer)
    @action(detail=True, methods=["post"])
    def save(self, request, pk=None):
        replay = self.get_object()
        incoming = DecisionSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            services.replay_save(
                replay=replay,
                user=request.user,
                reason=incoming.validated_data.get("reason", ""),
                url=request.build_absolute_uri(replay.get_absolute_url()),
            )
        except ValidationError as exc:
            raise _validation(exc) from None
        replay.refresh_from_db()
        return Response(self.get_serializer(replay).data)

    @extend_schema(request=DecisionSerializer, responses=ReplaySerializer)
    @action(detail=True, methods=["post"])
    def discard(self, request, pk=None):
        replay = self.get_object()
        incoming = DecisionSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            services.replay_discard(replay=replay, user=request.user, reason=incoming.validated_data.get("reason", ""))
        except ValidationError as exc:
            raise _validation(exc) from None
        replay.refresh_from_db()
        return Response(self.get_serializer(replay).data)


# --- quota requests -----------------------------------------------------------------------------------


class QuotaRequestSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="name", read_only=True)
    instance_type = serializers.SlugRelatedField(slug_field="name", read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    version = serializers.SlugRelatedField(slug_field="number", read_only=True)
    events = serializers.SerializerMethodField()

    class Meta:
        model = QuotaRequest
        fields = [
            "id",
            "team",
            "instance_type",
            "requested_by",
            "created_at",
            "instances",
            "accelerators",
            "vcpus",
            "memory_gib",
            "current",
            "start_on",
            "why",
            "status",
            "replay",
            "decided_by",
            "decided_at",
            "decision_reason",
            "version",
            "events",
        ]
        read_only_fields = fields

    def get_events(self, obj) -> list[dict]:
        return [
            {"at": e.at, "actor": e.actor.username if e.actor else None, "action": e.action, "text": e.text}
            for e in obj.events.select_related("actor")
        ]


class QuotaRequestCreateSerializer(serializers.Serializer):
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all())
    instance_type = serializers.SlugRelatedField(slug_field="name", queryset=InstanceType.objects.all())
    accelerators = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    instances = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    vcpus = serializers.FloatField(required=False, allow_null=True, min_value=0)
    memory_gib = serializers.FloatField(required=False, allow_null=True, min_value=0)
    start_on = serializers.DateField()
    why = serializers.CharField(max_length=2000)

    def validate_team(self, team):
        user = self.context["request"].user
        if not Team.objects.visible_to(user).filter(pk=team.pk).exists():
            raise serializers.ValidationError("no such team")
        return team


class ChangeSerializer(serializers.Serializer):
    accelerators = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    instances = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    vcpus = serializers.FloatField(required=False, allow_null=True, min_value=0)
    memory_gib = serializers.FloatField(required=False, allow_null=True, min_value=0)
    reason = serializers.CharField(required=False, allow_blank=True, max_length=2000)


AMOUNTS = ("accelerators", "instances", "vcpus", "memory_gib")


class QuotaRequestViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Quota requests. Scientists ask for their teams and read their teams' requests; managers read all;
    admins approve (the allocation saved as a version naming the request), change (replayed again) or refuse
    (with a reason). Each request carries its what-if replay's id (GET /api/whatif/replays/{id}/)."""

    serializer_class = QuotaRequestSerializer
    filterset_fields = ["status"]

    def get_queryset(self):
        return QuotaRequest.objects.visible_to(self.request.user).select_related(
            "team", "instance_type", "requested_by", "decided_by", "version"
        )

    def _url_for(self):
        return lambda r: self.request.build_absolute_uri(r.get_absolute_url())

    def _done(self, obj, code=status.HTTP_200_OK):
        obj = self.get_queryset().get(pk=obj.pk)
        return Response(self.get_serializer(obj).data, status=code)

    @extend_schema(request=QuotaRequestCreateSerializer, responses={201: QuotaRequestSerializer})
    def create(self, request):
        incoming = QuotaRequestCreateSerializer(data=request.data, context={"request": request})
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        amounts = {k: data[k] for k in AMOUNTS if data.get(k) is not None}
        try:
            created = quota_requests.quota_request_submit(
                user=request.user,
                team=data["team"],
                instance_type=data["instance_type"],
                amounts=amounts,
                start_on=data["start_on"],
                why=data["why"],
                url_for=self._url_for(),
            )
        except ValidationError as exc:
            raise _validation(exc) from None
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        return self._done(created, status.HTTP_201_CREATED)

    def _decide(self, pk, act):
        obj = self.get_object()
        try:
            act(obj)
        except ValidationError as exc:
            raise _validation(exc) from None
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        return self._done(obj)

    @extend_schema(request=DecisionSerializer, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        reason = request.data.get("reason", "") if isinstance(request.data, dict) else ""
        return self._decide(
            pk,
            lambda r: quota_requests.quota_request_approve(
                request=r, user=request.user, reason=str(reason), url_for=self._url_for()
            ),
        )

    @extend_schema(request=DecisionSerializer, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def refuse(self, request, pk=None):
        reason = request.data.get("reason", "") if isinstance(request.data, dict) else ""
        return self._decide(
            pk,
            lambda r: quota_requests.quota_request_refuse(
                request=r, user=request.user, reason=str(reason), url_for=self._url_for()
            ),
        )

    @extend_schema(request=ChangeSerializer, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def change(self, request, pk=None):
        incoming = ChangeSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        amounts = {k: data[k] for k in AMOUNTS if data.get(k) is not None}
        return self._decide(
            pk,
            lambda r: quota_requests.quota_request_change(
                request=r, user=request.user, amounts=amounts, reason=data.get("reason", ""), url_for=self._url_for()
            ),
        )

    @extend_schema(request=None, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def withdraw(self, request, pk=None):
        return self._decide(pk, lambda r: quota_requests.quota_request_withdraw(request=r, user=request.user))
