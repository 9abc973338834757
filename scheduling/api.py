"""REST API for jobs: list (same filters as the page), submit, show with timeline, cancel, and the loop's runs."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from scheduling import selectors, services
from scheduling.filters import JobFilter
from scheduling.models import AdmissionRun
from scheduling.serializers import AdmissionRunSerializer, JobDetailSerializer, JobSerializer, JobSubmitSerializer


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    """Jobs of the caller's teams (everything for admins and managers). Other teams' jobs answer 404."""

    filterset_class = JobFilter

    def get_queryset(self):
        return selectors.job_list(self.request.user)

    def get_serializer_class(self):
        if self.action == "create":
            return JobSubmitSerializer
        if self.action == "retrieve":
            return JobDetailSerializer
        return JobSerializer

    @extend_schema(request=JobSubmitSerializer, responses={201: JobDetailSerializer})
    def create(self, request, *args, **kwargs):
        incoming = JobSubmitSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        job = services.job_submit(user=request.user, request=services.JobRequest(**incoming.validated_data))
        job = self.get_queryset().get(pk=job.pk)
        out = JobDetailSerializer(job, context=self.get_serializer_context())
        return Response(out.data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=JobSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        try:
            job = services.job_cancel(user=request.user, pk=pk)
        except services.JobNotFound as exc:
            raise NotFound("no such job") from exc
        return Response(JobSerializer(job, context=self.get_serializer_context()).data)


class IsPortalAdmin(permissions.BasePermission):
    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.is_portal_admin)


class AdmissionRunViewSet(viewsets.ReadOnlyModelViewSet):
    """The admission loop's recent runs (admins)."""

    serializer_class = AdmissionRunSerializer
    permission_classes = [IsPortalAdmin]
    queryset = AdmissionRun.objects.all()
    filterset_fields = ["trigger"]


def register(router):
    router.register("jobs", JobViewSet, basename="job")
    router.register("admission-runs", AdmissionRunViewSet, basename="admission-run")
