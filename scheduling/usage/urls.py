from django.urls import path

from scheduling.usage import views

urlpatterns = [
    path("usage/", views.dashboard, name="dashboard"),
    path("usage/teams/<str:name>/", views.team_usage, name="team"),
    path("reports/", views.reports, name="reports"),
    path("reports/summary.csv", views.summary_csv, name="summary-csv"),
    path("reports/jobs/", views.jobs_report, name="jobs-report"),
    path("reports/jobs.csv", views.jobs_csv, name="jobs-csv"),
    path("reports/top-jobs/", views.top_jobs_report, name="top-jobs"),
    path("reports/top-jobs.csv", views.top_jobs_csv, name="top-jobs-csv"),
    path("profile/digest/", views.digest_settings, name="digest"),
    path("alerts/", views.alerts, name="alerts"),
    path("alerts/rules/<int:pk>/", views.alert_rule_edit, name="alert-rule-edit"),
    path("alerts/rules/<int:pk>/delete/", views.alert_rule_delete, name="alert-rule-delete"),
]
