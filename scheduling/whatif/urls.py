from django.urls import path

from scheduling.whatif import request_views, views

urlpatterns = [
    path("teams/<int:pk>/fair-share/", views.team_fair_share, name="team-fair-share"),
    path("whatif/", views.replay_list, name="replay-list"),
    path("whatif/new/", views.replay_new, name="replay-new"),
    path("whatif/from-allocations/<int:pk>/", views.replay_from_allocations, name="replay-from-allocations"),
    path("whatif/from-team/<int:pk>/", views.replay_from_team, name="replay-from-team"),
    path("whatif/from-policy/", views.replay_from_policy, name="replay-from-policy"),
    path("whatif/replays/<int:pk>/", views.replay_detail, name="replay-detail"),
    path("whatif/replays/<int:pk>/save/", views.replay_save, name="replay-save"),
    path("whatif/replays/<int:pk>/discard/", views.replay_discard, name="replay-discard"),
    path("whatif/advice/", views.advice_list, name="advice"),
    path("whatif/advice/<int:pk>/replay/", views.advice_replay, name="advice-replay"),
    path("quota-requests/", request_views.request_list, name="request-list"),
    path("quota-requests/new/", request_views.request_new, name="request-new"),
    path("quota-requests/<int:pk>/", request_views.request_detail, name="request-detail"),
    path("quota-requests/<int:pk>/approve/", request_views.request_approve, name="request-approve"),
    path("quota-requests/<int:pk>/change/", request_views.request_change, name="request-change"),
    path("quota-requests/<int:pk>/refuse/", request_views.request_refuse, name="request-refuse"),
    path("quota-requests/<int:pk>/withdraw/", request_views.request_withdraw, name="request-withdraw"),
]
