from django.urls import path

from scheduling import health, views

app_name = "jobs"

urlpatterns = [
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/submit/", views.job_submit, name="job-submit"),
    path("jobs/submit/size-defaults/", views.job_size_defaults, name="job-size-defaults"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/status/", views.job_status, name="job-status"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job-cancel"),
    path("admission-runs/", views.admission_runs, name="admission-runs"),
    path("readyz", health.readyz, name="readyz"),
]
