from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField()
    is_admin = serializers.BooleanField()
    teams = serializers.ListField(child=serializers.CharField())


class MeView(APIView):
    """Who the caller is: username, role and teams."""

    @extend_schema(responses=MeSerializer)
    def get(self, request):
        user = request.user
        data = {
            "username": user.username,
            "role": "admin" if user.is_portal_admin else user.role,
            "is_admin": user.is_portal_admin,
            "teams": list(user.teams.order_by("name").values_list("name", flat=True)),
        }
        return Response(MeSerializer(data).data)
