"""The REST API's root: each app registers its viewsets on the one router."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

import quotas.api
import scheduling.api
import scheduling.usage.api
from portal.api_views import MeView

router = DefaultRouter()
for register in (quotas.api.register, scheduling.api.register, scheduling.usage.api.register):
    register(router)

urlpatterns = [
    path("me/", MeView.as_view(), name="api-me"),
    path("", include("scheduling.whatif.api_urls")),
    path("", include(router.urls)),
]
