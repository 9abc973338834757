"""Cluster backends: where admitted jobs actually run. `get_backend()` picks one from settings."""

from django.conf import settings
from django.utils.module_loading import import_string

BACKENDS = {
    "simulated": "scheduling.backends.simulated.SimulatedCluster",
    "kubernetes": "scheduling.backends.kubernetes.KubernetesCluster",
}


def get_backend():
    name = settings.CLUSTER_BACKEND
    if name not in BACKENDS:
        raise ValueError(f"CLUSTER_BACKEND={name!r} is not one of {', '.join(BACKENDS)}")
    return import_string(BACKENDS[name])()
