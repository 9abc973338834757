"""API paths of the what-if app that sit outside the router (a team's fair share lives under teams/)."""

from django.urls import path

from scheduling.whatif import api

urlpatterns = [
    path("teams/<int:pk>/fair-share/", api.TeamFairShareView.as_view(), name="api-team-fair-share"),
]
