from django.urls import path

from scheduling.whatif import views

urlpatterns = [
    path("teams/<int:pk>/fair-share/", views.team_fair_share, name="team-fair-share"),
]
