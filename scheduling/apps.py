from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "scheduling"
    verbose_name = "Scheduling"

    def ready(self):
        from quotas.signals import configuration_changed

        configuration_changed.connect(_rerun_admission, dispatch_uid="scheduling.rerun_admission")


def _rerun_admission(sender, what="configuration", **kwargs):
    """Quota, policy or inventory changed: run the admission loop once the change commits."""
    from scheduling.loop import admission_request

    admission_request(f"config:{what}")
