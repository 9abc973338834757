from django.urls import path

from scheduling.whatif import views

urlpatterns = [
    path("teams/<int:pk>/fair-share/", views.team_fair_share, name="team-fair-share"),
    path("whatif/", views.replay_list, name="replay-list"),
    path("whatif/new/", views.replay_new, name="replay-new"),
    path("whatif/from-allocations/<int:pk>/", views.replay_from_allocations, name="replay-from-allocations"),
    path("whatif/from-policy/", views.replay_from_policy, name="replay-from-policy"),
    path("whatif/replays/<int:pk>/", views.replay_detail, name="replay-detail"),
    path("whatif/replays/<int:pk>/save/", views.replay_save, name="replay-save"),
    path("whatif/replays/<int:pk>/discard/", views.replay_discard, name="replay-discard"),
]
