"""The REST API's root: each app registers its viewsets on the one router."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from portal.api_views import MeView

router = DefaultRouter()

for module in ("quotas.api", "scheduling.api", "scheduling.usage.api", "scheduling.kube.api"):
    try:
        __import__(module, fromlist=["register"]).register(router)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise

urlpatterns = [
    path("me/", MeView.as_view(), name="api-me"),
    path("", include(router.urls)),
]
