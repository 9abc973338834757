"""Connecting to the Kubernetes API: configuration from settings, and API failures in the portal's terms.

Every call the backend makes goes through `call()`, which adds a request timeout and turns transport
failures (refused connections, timeouts, dropped streams, 5xx answers) into ClusterUnreachable, so the
admission loop can record "cluster unreachable" and try again on its next run.
"""

import os
from pathlib import Path

import urllib3
from django.conf import settings
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.config.config_exception import ConfigException

from scheduling.backends.base import ClusterUnreachable

MODES = ("portal", "kueue")


class KubeConfigError(ClusterUnreachable):
    """No usable Kubernetes configuration (missing or broken kubeconfig, not running in a pod)."""


class KubeForbidden(ClusterUnreachable):
    """The API server refused the portal's credentials or its RBAC does not allow the call."""


class KubeRejected(ClusterUnreachable):
    """The API server refused a request (a 4xx the backend does not handle itself: an admission webhook,
    a policy, a name taken by someone else). The loop keeps the job waiting and retries, like an outage,
    so one refused job never stops the others; the message says what was refused and why."""

    def __init__(self, message: str, *, status: int, reason: str = ""):
        super().__init__(message)
        self.status = status
        self.reason = reason


def setting(name: str, default):
    return getattr(settings, name, default)


def admission_mode() -> str:
    mode = str(setting("KUBE_ADMISSION_MODE", "portal")).strip().lower() or "portal"
    if mode not in MODES:
        raise KubeConfigError(f"KUBE_ADMISSION_MODE={mode!r} is not one of {', '.join(MODES)}")
    return mode


def request_timeout() -> float:
    return float(setting("KUBE_REQUEST_TIMEOUT_SECONDS", 10.0))


def describe_source() -> str:
    """Where the configuration comes from, in words, for pages and the check command."""
    path = setting("KUBECONFIG", "")
    if path:
        context = setting("KUBE_CONTEXT", "")
        return f"kubeconfig {path}" + (f" (context {context})" if context else "")
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "in-cluster service account"
    default = Path.home() / ".kube" / "config"
    if default.exists():
        return f"kubeconfig {default} (default location)"
    return "none"


def build_api_client() -> client.ApiClient:
    """An ApiClient from settings: KUBECONFIG (+ KUBE_CONTEXT), else in-cluster, else ~/.kube/config."""
    cfg = client.Configuration()
    path = setting("KUBECONFIG", "")
    context = setting("KUBE_CONTEXT", "") or None
    try:
        if path:
            for one in str(path).split(os.pathsep):
                if not Path(one).is_file():
                    raise KubeConfigError(
                        f"KUBECONFIG={one} does not exist or is not a file. Point KUBECONFIG at the kubeconfig "
                        "kubectl uses (e.g. `aws eks update-kubeconfig` writes ~/.kube/config), or leave it empty "
                        "when the portal runs inside the cluster."
                    )
            config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=cfg)
        elif (Path.home() / ".kube" / "config").is_file():
            config.load_kube_config(context=context, client_configuration=cfg)
        else:
            raise KubeConfigError(
                "No Kubernetes configuration: CLUSTER_BACKEND=kubernetes needs KUBECONFIG=/path/to/kubeconfig, "
                "or the portal running in a pod with the service account from deploy/rbac.yaml."
            )
    except ConfigException as exc:
        raise KubeConfigError(f"The Kubernetes configuration ({describe_source()}) cannot be used: {exc}") from exc
    return configure(cfg)


def configure(cfg: client.Configuration) -> client.ApiClient:
    # No silent urllib3 retries: the admission loop retries on its next run, and a dead API server
    # must be reported within one request timeout, not four.
    cfg.retries = False
    return client.ApiClient(cfg)


def status_message(exc: ApiException) -> tuple[str, str]:
    """The (reason, message) of a Kubernetes Status answer, or the HTTP reason when there is none."""
    import json

    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        body = {}
    if not isinstance(body, dict):
        body = {}
    return body.get("reason") or str(exc.reason or ""), body.get("message") or str(exc.reason or "")


def translate(exc: Exception, what: str) -> Exception:
    """An exception from the client, in the portal's terms (the caller raises it)."""
    if isinstance(exc, ApiException):
        reason, message = status_message(exc)
        if exc.status == 0 or exc.status >= 500 or exc.status == 429:
            return ClusterUnreachable(f"{what}: the API server answered {exc.status} {reason}: {message}")
        if exc.status in (401, 403):
            return KubeForbidden(
                f"{what}: forbidden ({exc.status} {reason}): {message}. Check the portal's credentials and that "
                "deploy/rbac.yaml is applied."
            )
        return KubeRejected(f"{what}: {exc.status} {reason}: {message}", status=exc.status, reason=reason)
    if isinstance(exc, (urllib3.exceptions.HTTPError, OSError)):
        return ClusterUnreachable(f"{what}: cannot reach the Kubernetes API server ({type(exc).__name__}: {exc})")
    return exc


def call(what: str, fn, *args, ok_status: tuple[int, ...] = (), **kwargs):
    """Call an API method with a timeout. Statuses in ok_status come back as the ApiException itself."""
    kwargs.setdefault("_request_timeout", request_timeout())
    try:
        return fn(*args, **kwargs)
    except ApiException as exc:
        if exc.status in ok_status:
            return exc
        raise translate(exc, what) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise translate(exc, what) from exc
