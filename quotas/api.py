"""REST API for the cluster's configuration. Same rules as the pages: everyone authenticated reads the
inventory and policy; teams through Team.objects.visible_to (another team's is a 404); only admins write.
Writes go through quotas.services, so validation and history are the pages'."""

from django.db.models import Sum
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from portal.schema import SingleObjectSchema
from quotas import selectors, services
from quotas.models import (
    ClusterPolicy,
    ComputeAllocation,
    ConfigVersion,
    InstanceType,
    NodeGroup,
    PriorityClass,
    Team,
    VersionScope,
)
from quotas.serializers import (
    AllocationInputSerializer,
    AllocationSerializer,
    AllocationUpdateSerializer,
    ClusterPolicyInputSerializer,
    ClusterPolicySerializer,
    ConfigVersionSerializer,
    InstanceTypeSerializer,
    NodeGroupSerializer,
    PriorityClassSerializer,
    RevertInputSerializer,
    TeamAllocationsInputSerializer,
    TeamInputSerializer,
    TeamSerializer,
    TeamStatusSerializer,
)


class IsAdminOrReadOnly(permissions.BasePermission):
    message = "only admins change the cluster's configuration"

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        # On one object, the object check decides, after the visibility rule: another team's is a 404.
        return request.method in permissions.SAFE_METHODS or request.user.is_portal_admin or view.detail

    def has_object_permission(self, request, view, obj):
        return request.method in permissions.SAFE_METHODS or request.user.is_portal_admin


def _versioned_response(version, status_code=status.HTTP_200_OK):
    body = ConfigVersionSerializer(version).data if version else None
    return Response({"version": body}, status=status_code)


class ServiceModelViewSet(viewsets.ModelViewSet):
    """A ModelViewSet whose writes call a service (full_clean, one transaction)."""

    permission_classes = [IsAdminOrReadOnly]
    save_service = None
    delete_service = None
    object_kwarg = ""

    def perform_create(self, serializer):
        serializer.instance = type(self).save_service(user=self.request.user, **serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = type(self).save_service(
            user=self.request.user, **{self.object_kwarg: serializer.instance}, **serializer.validated_data
        )

    def perform_destroy(self, instance):
        type(self).delete_service(user=self.request.user, **{self.object_kwarg: instance})


class InstanceTypeViewSet(ServiceModelViewSet):
    """Instance types: what one node of each kind offers."""

    serializer_class = InstanceTypeSerializer
    queryset = InstanceType.objects.annotate(nodes=Sum("node_groups__node_count")).order_by("name")
    filterset_fields = ["family", "accelerator_resource"]
    save_service = services.instance_type_save
    delete_service = services.instance_type_delete
    object_kwarg = "instance_type"

    def perform_create(self, serializer):
        super().perform_create(serializer)
        serializer.instance.nodes = 0

    def perform_update(self, serializer):
        nodes = serializer.instance.nodes
        super().perform_update(serializer)
        serializer.instance.nodes = nodes


class NodeGroupViewSet(ServiceModelViewSet):
    """Node groups: the cluster's capacity, instance type x node count."""

    serializer_class = NodeGroupSerializer
    queryset = NodeGroup.objects.select_related("instance_type")
    save_service = services.node_group_save
    delete_service = services.node_group_delete
    object_kwarg = "node_group"


class PriorityClassViewSet(ServiceModelViewSet):
    """Priority classes; a job without one ranks below every class."""

    serializer_class = PriorityClassSerializer
    queryset = PriorityClass.objects.all()
    save_service = services.priority_class_save
    delete_service = services.priority_class_delete
    object_kwarg = "priority_class"


@extend_schema_view(
    create=extend_schema(request=TeamInputSerializer, responses={201: TeamSerializer}),
    update=extend_schema(request=TeamInputSerializer, responses=TeamSerializer),
    partial_update=extend_schema(request=TeamInputSerializer, responses=TeamSerializer),
)
class TeamViewSet(viewsets.ModelViewSet):
    """Teams with members and allocations. Scientists see their own teams; managers and admins all."""

    serializer_class = TeamSerializer
    permission_classes = [IsAdminOrReadOnly]
    filterset_fields = ["name", "sharing"]

    def get_queryset(self):
        return (
            Team.objects.visible_to(self.request.user)
            .prefetch_related("members", "allocations__instance_type", "allocations__team")
            .order_by("name")
        )

    def _input(self, partial):
        serializer = TeamInputSerializer(data=self.request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        return data.pop("reason", ""), data.pop("members", None), data

    def create(self, request, *args, **kwargs):
        reason, members, fields = self._input(partial=False)
        team = services.team_create(user=request.user, members=members or [], reason=reason, **fields)
        return Response(TeamSerializer(self.get_queryset().get(pk=team.pk)).data, status=status.HTTP_201_CREATED)

    def update(self, request, *args, partial=False, **kwargs):
        team = self.get_object()
        reason, members, fields = self._input(partial=partial)
        services.team_update(team=team, user=request.user, members=members, reason=reason, **fields)
        return Response(TeamSerializer(self.get_queryset().get(pk=team.pk)).data)

    def perform_destroy(self, instance):
        services.team_delete(team=instance, user=self.request.user)

    @extend_schema(responses=TeamStatusSerializer)
    @action(detail=True, methods=["get"])
    def status(self, request, pk=None):
        """Quota, usage, borrowed, lent and fair share now, per instance type and resource."""
        team = self.get_object()
        standing = selectors.team_standing(team)
        data = vars(standing) if standing else {}
        empty = {"quota": {}, "borrowing_limit": None, "usage": {}, "borrowed": {}, "lent": {}, "fair_share": {}}
        return Response(TeamStatusSerializer({**empty, "pending": 0, **data}).data)

    @extend_schema(responses=ConfigVersionSerializer(many=True))
    @action(detail=True, methods=["get"])
    def history(self, request, pk=None):
        """Every version of the team's configuration, newest first."""
        team = self.get_object()
        return Response(ConfigVersionSerializer(selectors.team_versions(team), many=True).data)

    @extend_schema(request=RevertInputSerializer, responses={200: OpenApiResponse(description="the new version")})
    @action(detail=True, methods=["post"])
    def revert(self, request, pk=None):
        """Restore an earlier version (the revert is a new version)."""
        team = self.get_object()
        body = RevertInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        version = ConfigVersion.objects.filter(team=team, number=body.validated_data["version"]).first()
        if version is None:
            raise serializers.ValidationError({"version": "no such version of this team"})
        new = services.version_revert(version=version, user=request.user, reason=body.validated_data.get("reason", ""))
        return _versioned_response(new)

    @extend_schema(
        methods=["PUT"], request=TeamAllocationsInputSerializer, responses={200: OpenApiResponse(description="version")}
    )
    @extend_schema(methods=["GET"], responses=AllocationSerializer(many=True))
    @action(detail=True, methods=["get", "put"], url_path="allocations")
    def allocations(self, request, pk=None):
        """GET the team's allocations; PUT replaces them all at once (one version)."""
        team = self.get_object()
        if request.method == "GET":
            qs = team.allocations.select_related("instance_type", "team")
            return Response(AllocationSerializer(qs, many=True).data)
        body = TeamAllocationsInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        version = services.allocations_update(
            team=team,
            allocations={name: dict(v) for name, v in body.validated_data["allocations"].items()},
            user=request.user,
            reason=body.validated_data.get("reason", ""),
            replace=True,
        )
        return _versioned_response(version)


@extend_schema_view(
    create=extend_schema(request=AllocationInputSerializer, responses={201: AllocationSerializer}),
    update=extend_schema(request=AllocationUpdateSerializer, responses=AllocationSerializer),
    partial_update=extend_schema(request=AllocationUpdateSerializer, responses=AllocationSerializer),
)
class AllocationViewSet(viewsets.ModelViewSet):
    """Compute allocations (team x instance type). Each change is a new version of the team's configuration."""

    serializer_class = AllocationSerializer
    permission_classes = [IsAdminOrReadOnly]
    filterset_fields = ["team__name", "instance_type__name"]

    def get_queryset(self):
        teams = Team.objects.visible_to(self.request.user)
        return ComputeAllocation.objects.filter(team__in=teams).select_related("team", "instance_type")

    def create(self, request, *args, **kwargs):
        body = AllocationInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        team, it, reason = data.pop("team"), data.pop("instance_type"), data.pop("reason", "")
        if team.allocations.filter(instance_type=it).exists():
            raise serializers.ValidationError({"instance_type": f"{team} already has an allocation on {it}"})
        services.allocations_update(team=team, allocations={it: data}, user=request.user, reason=reason)
        alloc = self.get_queryset().filter(team=team, instance_type=it).first()
        if alloc is None:
            raise serializers.ValidationError({"detail": "give at least one amount"})
        return Response(AllocationSerializer(alloc).data, status=status.HTTP_201_CREATED)

    def update(self, request, *args, partial=False, **kwargs):
        alloc = self.get_object()
        body = AllocationUpdateSerializer(data=request.data, partial=partial)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        reason = data.pop("reason", "")
        fields = {f: getattr(alloc, f) for f in ("instances", "accelerators", "vcpus", "memory_gib")} if partial else {}
        fields.update(data)
        if partial and data.get("instances") is not None:
            fields.update(accelerators=None, vcpus=None, memory_gib=None)
        elif partial and any(data.get(f) is not None for f in ("accelerators", "vcpus", "memory_gib")):
            fields["instances"] = None
        services.allocations_update(
            team=alloc.team, allocations={alloc.instance_type: fields}, user=request.user, reason=reason
        )
        alloc = self.get_queryset().filter(pk=alloc.pk).first()
        return Response(AllocationSerializer(alloc).data if alloc else None)

    def destroy(self, request, *args, **kwargs):
        alloc = self.get_object()
        services.allocations_update(team=alloc.team, allocations={alloc.instance_type: None}, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ClusterPolicyViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The cluster policy (one object): GET /cluster-policy/, PUT or PATCH /cluster-policy/current/."""

    serializer_class = ClusterPolicySerializer
    permission_classes = [IsAdminOrReadOnly]
    pagination_class = None
    schema = SingleObjectSchema()
    filter_backends = []

    def get_queryset(self):
        return ClusterPolicy.objects.filter(pk=ClusterPolicy.load().pk)

    def get_object(self):
        """The one policy (used by OPTIONS, which asks for the object a PUT would change)."""
        policy = ClusterPolicy.load()
        self.check_object_permissions(self.request, policy)
        return policy

    @extend_schema(responses=ClusterPolicySerializer)
    def list(self, request, *args, **kwargs):
        return Response(ClusterPolicySerializer(ClusterPolicy.load()).data)

    @extend_schema(methods=["GET"], responses=ClusterPolicySerializer)
    @extend_schema(methods=["PUT", "PATCH"], request=ClusterPolicyInputSerializer, responses=ClusterPolicySerializer)
    @action(detail=False, methods=["get", "put", "patch"])
    def current(self, request):
        if request.method == "GET":
            return Response(ClusterPolicySerializer(ClusterPolicy.load()).data)
        body = ClusterPolicyInputSerializer(data=request.data, partial=request.method == "PATCH")
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        reason = data.pop("reason", "")
        services.cluster_policy_update(user=request.user, reason=reason, **data)
        return Response(ClusterPolicySerializer(ClusterPolicy.load()).data)

    @extend_schema(responses=ConfigVersionSerializer(many=True))
    @action(detail=False, methods=["get"])
    def history(self, request):
        return Response(ConfigVersionSerializer(selectors.cluster_versions(), many=True).data)

    @extend_schema(request=RevertInputSerializer, responses={200: OpenApiResponse(description="the new version")})
    @action(detail=False, methods=["post"])
    def revert(self, request):
        body = RevertInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        version = get_object_or_404(ConfigVersion, scope=VersionScope.CLUSTER, number=body.validated_data["version"])
        new = services.version_revert(version=version, user=request.user, reason=body.validated_data.get("reason", ""))
        return _versioned_response(new)


def register(router):
    router.register("instance-types", InstanceTypeViewSet, basename="instance-type")
    router.register("node-groups", NodeGroupViewSet, basename="node-group")
    router.register("priority-classes", PriorityClassViewSet, basename="priority-class")
    router.register("teams", TeamViewSet, basename="team")
    router.register("allocations", AllocationViewSet, basename="allocation")
    router.register("cluster-policy", ClusterPolicyViewSet, basename="cluster-policy")
