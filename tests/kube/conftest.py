"""A fake Kubernetes API server per test, and the backend pointed at it through the official client."""

import pytest
from kubernetes import client

from scheduling.backends.kubernetes import KubernetesCluster
from scheduling.kube.client import configure
from tests.kube.fake_apiserver import FakeApiServer


@pytest.fixture
def apiserver():
    server = FakeApiServer().start()
    yield server
    server.stop()


def backend_for(url: str, *, mode: str = "portal", timeout: float = 2.0) -> KubernetesCluster:
    cfg = client.Configuration(host=url)
    return KubernetesCluster(api_client=configure(cfg), mode=mode, watch_seconds=0.2)


@pytest.fixture
def kube(apiserver, settings):
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 2.0
    return backend_for(apiserver.url)


@pytest.fixture
def kueue(apiserver, settings):
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 2.0
    return backend_for(apiserver.url, mode="kueue")
