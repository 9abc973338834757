from django.urls import path

from scheduling.kube import views

urlpatterns = [
    path("kubernetes/", views.inventory, name="inventory"),
    path("kubernetes/read/", views.inventory_read, name="inventory-read"),
    path("kubernetes/readings/<int:pk>/apply/", views.inventory_apply, name="inventory-apply"),
    path("kubernetes/check/", views.check, name="check"),
    path("kubernetes/kueue/", views.kueue, name="kueue"),
    path("kubernetes/kueue/apply/", views.kueue_apply, name="kueue-apply"),
    path("kubernetes/workloads/", views.workloads, name="workloads"),
]
