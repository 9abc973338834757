"""The shipped Dockerfile, compose.yaml and Kubernetes manifests agree with the code they run: images,
commands, environment variables (only names portal/settings.py reads), probes (URLs that exist, ports that
are served, headers the settings accept)."""

import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.urls import resolve

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "gpu-quota-portal:latest"
ROLES = {  # role -> how its command starts
    "web": ["gunicorn", "portal.wsgi"],
    "worker": ["celery", "-A", "portal", "worker"],
    "beat": ["celery", "-A", "portal", "beat"],
    "scheduler": ["python", "manage.py", "scheduler"],
    "migrate": ["python", "manage.py", "migrate"],
}
REQUIRED = {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"}  # production needs all three on every role


def settings_env_names() -> set[str]:
    source = (ROOT / "portal" / "settings.py").read_text()
    return set(re.findall(r"""\.(?:str|bool|int|float|list|db)\(\s*["']([A-Z_][A-Z0-9_]*)["']""", source))


def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def manifests() -> list[dict]:
    return [doc for doc in yaml.safe_load_all((ROOT / "deploy" / "portal.yaml").read_text()) if doc]


def k8s_containers() -> dict[str, dict]:
    out = {}
    for doc in manifests():
        if doc["kind"] in ("Deployment", "Job"):
            for container in doc["spec"]["template"]["spec"]["containers"]:
                out[container["name"]] = {**container, "_pod": doc["spec"]["template"]["spec"], "_doc": doc}
    return out


def starts_as(command: list[str], role: str) -> bool:
    return command[: len(ROLES[role])] == ROLES[role]


def test_settings_read_the_variables_the_deployments_set():
    names = settings_env_names()
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS", "ADMISSION_SCHEDULER"} <= names
    for name, service in compose()["services"].items():
        if service.get("image") == IMAGE:
            unknown = set(service["environment"]) - names
            assert not unknown, f"compose service {name} sets {unknown}, which portal/settings.py never reads"
            assert set(service["environment"]) >= REQUIRED, name
    config = next(d for d in manifests() if d["kind"] == "ConfigMap")
    assert not set(config["data"]) - names
    header = (ROOT / "deploy" / "portal.yaml").read_text().split("apiVersion", 1)[0]
    for name in REQUIRED:  # the Secret the header tells operators to create
        assert f"--from-literal={name}=" in header


def test_every_setting_value_given_is_one_the_code_accepts():
    config = next(d for d in manifests() if d["kind"] == "ConfigMap")["data"]
    env = compose()["x-portal"]["environment"]
    for values in (config, env):
        assert values["ADMISSION_SCHEDULER"] in ("process", "celery")
        if "CLUSTER_BACKEND" in values:
            assert values["CLUSTER_BACKEND"] in ("kubernetes", "${CLUSTER_BACKEND:-simulated}")
    assert config.get("KUBE_ADMISSION_MODE", "portal") in ("portal", "kueue")


def test_compose_runs_every_role_from_one_image_beside_postgres_and_redis():
    services = compose()["services"]
    assert {"postgres", "redis", "web", "worker", "beat", "scheduler", "migrate"} <= set(services)
    for role in ROLES:
        service = services[role]
        assert service["image"] == IMAGE and service["build"] == "."
        assert starts_as(service["command"], role), (role, service["command"])
    env = services["web"]["environment"]
    assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
    assert env["REDIS_URL"].startswith("redis://redis:6379/")
    assert "readyz" in " ".join(services["web"]["healthcheck"]["test"])
    assert "8000:8000" in services["web"]["ports"]


def test_kubernetes_runs_every_role_with_the_rbac_service_account():
    rbac = [d for d in yaml.safe_load_all((ROOT / "deploy" / "rbac.yaml").read_text()) if d]
    account = next(d for d in rbac if d["kind"] == "ServiceAccount")["metadata"]
    containers = k8s_containers()
    assert set(ROLES) <= set(containers)
    for role in ROLES:
        c = containers[role]
        assert c["image"] == IMAGE
        assert starts_as(c["command"], role), (role, c["command"])
        assert c["_pod"]["serviceAccountName"] == account["name"]
        assert c["_doc"]["metadata"]["namespace"] == account["namespace"]
        sources = {next(iter(s)): next(iter(s.values()))["name"] for s in c["envFrom"]}
        assert sources == {"configMapRef": "gpu-quota-portal", "secretRef": "gpu-quota-portal"}
    deployments = {d["metadata"]["name"]: d for d in manifests() if d["kind"] == "Deployment"}
    beat = deployments["gpu-quota-portal-beat"]["spec"]
    assert beat["replicas"] == 1 and beat["strategy"]["type"] == "Recreate"  # never two beats
    assert deployments["gpu-quota-portal-scheduler"]["spec"]["replicas"] >= 2  # a standby takes over
    assert (ROOT / "scheduling" / "management" / "commands" / "scheduler.py").exists()


def test_probes_hit_urls_that_exist_on_the_port_that_is_served():
    web = k8s_containers()["web"]
    port = {p["name"]: p["containerPort"] for p in web["ports"]}
    assert f"0.0.0.0:{port['http']}" in web["command"]
    allowed = next(d for d in manifests() if d["kind"] == "ConfigMap")["data"]["ALLOWED_HOSTS"].split(",")
    for probe, view in (("readinessProbe", "readyz"), ("livenessProbe", "healthz")):
        get = web[probe]["httpGet"]
        assert get["port"] == "http"
        assert resolve(get["path"]).func.__name__ == view
        headers = {h["name"]: h["value"] for h in get["httpHeaders"]}
        assert headers["Host"] in allowed  # else Django answers 400 DisallowedHost
        header, value = settings.SECURE_PROXY_SSL_HEADER  # else SECURE_SSL_REDIRECT answers 301, a "success"
        assert (
            header == "HTTP_" + "X-Forwarded-Proto".upper().replace("-", "_") and headers["X-Forwarded-Proto"] == value
        )
    service = next(d for d in manifests() if d["kind"] == "Service")
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert service["spec"]["selector"] == web["_doc"]["spec"]["selector"]["matchLabels"]


def test_the_dockerfile_ships_the_code_the_roles_import():
    dockerfile = (ROOT / "Dockerfile").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    packages = re.search(r"include = \[(.*?)\]", pyproject).group(1)
    for package in re.findall(r'"(\w+)\*"', packages):
        assert f"COPY {package} ./{package}" in dockerfile
    for needed in ("templates", "static", "manage.py"):
        assert f"COPY {needed} " in dockerfile
    assert "EXPOSE 8000" in dockerfile and "collectstatic" in dockerfile
    assert re.search(r"^USER (?!root)", dockerfile, re.M)  # not as root


@pytest.mark.parametrize("path", ["/readyz", "/healthz"])
def test_the_probe_urls_need_no_login(path):
    assert getattr(resolve(path).func, "login_required", True) is False
