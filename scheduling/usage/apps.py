from django.apps import AppConfig


class UsageConfig(AppConfig):
    name = "scheduling.usage"
    label = "usage"
    verbose_name = "Usage and reports"
