from django.urls import path

from quotas import views

urlpatterns = [
    path("cluster/", views.cluster, name="cluster"),
    path("cluster/instance-types/new/", views.instance_type_edit, name="instance-type-create"),
    path("cluster/instance-types/<int:pk>/", views.instance_type_edit, name="instance-type-edit"),
    path("cluster/instance-types/<int:pk>/delete/", views.instance_type_delete, name="instance-type-delete"),
    path("cluster/node-groups/new/", views.node_group_edit, name="node-group-create"),
    path("cluster/node-groups/<int:pk>/", views.node_group_edit, name="node-group-edit"),
    path("cluster/node-groups/<int:pk>/delete/", views.node_group_delete, name="node-group-delete"),
    path("teams/", views.team_list, name="team-list"),
    path("teams/new/", views.team_edit, name="team-create"),
    path("teams/<int:pk>/", views.team_detail, name="team-detail"),
    path("teams/<int:pk>/edit/", views.team_edit, name="team-edit"),
    path("teams/<int:pk>/delete/", views.team_delete, name="team-delete"),
    path("teams/<int:pk>/allocations/", views.allocations, name="allocations"),
    path("teams/<int:pk>/allocations/preview/", views.allocation_preview, name="allocation-preview"),
    path("teams/<int:pk>/history/", views.team_history, name="team-history"),
    path("versions/<int:pk>/revert/", views.version_revert, name="version-revert"),
    path("policy/", views.policy, name="policy"),
    path("policy/priority-classes/new/", views.priority_class_edit, name="priority-class-create"),
    path("policy/priority-classes/<int:pk>/", views.priority_class_edit, name="priority-class-edit"),
    path("policy/priority-classes/<int:pk>/delete/", views.priority_class_delete, name="priority-class-delete"),
    path("policy/kueue.yaml", views.kueue_yaml, name="kueue"),
]
