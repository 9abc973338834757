from django.apps import AppConfig


class KubeConfig(AppConfig):
    name = "scheduling.kube"
    label = "kube"
    verbose_name = "Kubernetes backend"
