from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from portal import views
from scheduling.usage.metrics import metrics

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("profile/", views.profile, name="profile"),
    path("profile/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("django-admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("api/", include("portal.api_urls")),
]

# Each app owns its pages' urls module and namespace.
urlpatterns += [
    path("", include(("quotas.urls", "quotas"))),
    path("", include(("scheduling.urls", "jobs"))),
    path("", include(("scheduling.usage.urls", "usage"))),
    path("", include(("scheduling.kube.urls", "kube"))),
    path("", include(("scheduling.whatif.urls", "whatif"))),
]
