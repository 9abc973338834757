"""REST API for deciding with evidence: the fair share explained, what-if replays."""

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from quotas.models import Team
from scheduling.whatif import services
from scheduling.whatif.fairshare import fair_share_explained
from scheduling.whatif.models import MAX_WINDOW_DAYS, Replay
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
        derivations = fair_share_explained(team)
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
