"""API paths of the what-if app. Its own SimpleRouter (no API root view, so the main router's stays), and the
team's fair share under teams/."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from scheduling.whatif import api

router = SimpleRouter()
router.register("whatif/replays", api.ReplayViewSet, basename="replay")
router.register("quota-requests", api.QuotaRequestViewSet, basename="quota-request")

urlpatterns = [
    path("teams/<int:pk>/fair-share/", api.TeamFairShareView.as_view(), name="api-team-fair-share"),
    path("", include(router.urls)),
]
