"""REST API for deciding with evidence: the fair share explained."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from quotas.models import Team
from scheduling.whatif.fairshare import fair_share_explained


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
