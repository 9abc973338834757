"""The Kubernetes backend: portal jobs become suspended batch/v1 Jobs in their team's namespace.

Two modes (KUBE_ADMISSION_MODE):
- portal: the portal's engine admits. start() creates the Job suspended if needed, pins it to the
  assigned instance type and unsuspends it; stop(preempted=True) suspends it again.
- kueue: Kueue admits. start()/submit() create the Job suspended in the team's LocalQueue and leave
  unsuspending to Kueue; workloads() reads Kueue's Workloads back for reasons and queue positions.
"""

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from kubernetes import client
from kubernetes.client.rest import ApiException

from scheduling.backends.base import ClusterBackend, ClusterUnreachable, InventoryItem, Observation
from scheduling.kube import manifests
from scheduling.kube.client import (
    KubeRejected,
    admission_mode,
    build_api_client,
    call,
    setting,
)
from scheduling.kube.observed import WorkloadView, assign_positions, inventory_from_nodes, job_phase, workload_view
from scheduling.kube.watch import watcher_for

log = logging.getLogger(__name__)

CONFLICT_RETRIES = 5
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_WORKLOAD_VERSION = "v1beta1"
KUEUE_PLURALS = {
    "ResourceFlavor": "resourceflavors",
    "Cohort": "cohorts",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "Workload": "workloads",
}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


class KubernetesCluster(ClusterBackend):
    name = "kubernetes"

    def __init__(self, *, api_client: client.ApiClient | None = None, mode: str | None = None, watch_seconds=None):
        self._api_client = api_client
        self.mode = mode or admission_mode()
        if self.mode not in ("portal", "kueue"):
            raise ValueError(f"unknown admission mode {self.mode!r}")
        self.watch_seconds = float(watch_seconds if watch_seconds is not None else setting("KUBE_WATCH_SECONDS", 1.0))
        self.queue_label_in_portal_mode = bool(setting("KUBE_PORTAL_MODE_QUEUE_LABEL", False))
        self.last_inventory_warnings: list[str] = []

    # -- plumbing -------------------------------------------------------------------------------
    @property
    def api_client(self) -> client.ApiClient:
        if self._api_client is None:
            self._api_client = build_api_client()  # raises KubeConfigError (a ClusterUnreachable)
        return self._api_client

    @property
    def host(self) -> str:
        return self.api_client.configuration.host

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client)

    @property
    def batch(self) -> client.BatchV1Api:
        return client.BatchV1Api(self.api_client)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api_client)

    @staticmethod
    def _json(resp) -> dict:
        return json.loads(resp.data) if resp.data else {}

    # -- jobs -----------------------------------------------------------------------------------
    def ensure_namespace(self, name: str, *, team_name: str) -> None:
        found = call(f"read namespace {name}", self.core.read_namespace, name, ok_status=(404,))
        if not isinstance(found, ApiException):
            return
        body = manifests.namespace_manifest(name, team_name)
        call(f"create namespace {name}", self.core.create_namespace, body, ok_status=(409,))

    def submit(self, job, *, instance_type=None) -> str:
        """Create the job's Job, suspended (409 AlreadyExists: it is already there). Returns its reference."""
        self.ensure_namespace(job.team.namespace, team_name=job.team.name)
        body = manifests.job_manifest(
            job, mode=self.mode, instance_type=instance_type, queue_label_in_portal_mode=self.queue_label_in_portal_mode
        )
        ns, name = job.team.namespace, body["metadata"]["name"]
        created = call(
            f"create Job {ns}/{name}",
            self.batch.create_namespaced_job,
            ns,
            body,
            _preload_content=False,
            ok_status=(409,),
        )
        if isinstance(created, ApiException):
            existing = self._read_job(ns, name)
            if existing is None:  # deleted between our create and read: try once more next run
                raise ClusterUnreachable(f"Job {ns}/{name} was deleted while being created; retrying")
            owner = ((existing.get("metadata") or {}).get("labels") or {}).get(manifests.LABEL_JOB_ID)
            if owner != str(job.pk):
                raise KubeRejected(
                    f"a Job {ns}/{name} exists that is not portal job #{job.pk}; delete it or rename the job",
                    status=409,
                    reason="AlreadyExists",
                )
            log.info("Job %s/%s already exists; using it", ns, name)
        return f"{ns}/{name}"

    def start(self, job, *, instance_type: str, nodes: list[int] | None) -> str:
        itype = self._instance_type(job, instance_type)
        ref = self.submit(job, instance_type=itype)
        if self.mode == "kueue":
            return ref  # Kueue admits and unsuspends
        ns, name = ref.split("/", 1)
        place = manifests.placement(job, itype)

        def admit(obj: dict) -> bool:
            spec = obj["spec"]
            pod = spec["template"].setdefault("spec", {})
            if not spec.get("suspend") and pod.get("nodeSelector", {}) == place["nodeSelector"]:
                return False
            # Scheduling directives may change only while the Job is suspended: one update does both.
            pod["nodeSelector"] = place["nodeSelector"]
            pod["tolerations"] = place["tolerations"]
            spec["suspend"] = False
            return True

        self._update_job(ns, name, admit)
        return ref

    def stop(self, job, *, reason: str, preempted: bool) -> None:
        ns, name = job.team.namespace, manifests.job_name(job)
        if preempted:
            call(
                f"suspend Job {ns}/{name}",
                self.batch.patch_namespaced_job,
                name,
                ns,
                {"spec": {"suspend": True}},
                _preload_content=False,
                ok_status=(404,),
            )
            return
        call(
            f"delete Job {ns}/{name}",
            self.batch.delete_namespaced_job,
            name,
            ns,
            propagation_policy="Background",
            _preload_content=False,
            ok_status=(404,),
        )

    def observe(self, jobs, *, now: datetime) -> list[Observation]:
        cache = watcher_for(self.host).sync(self.batch, wait=self.watch_seconds)
        out = []
        for job in jobs:
            ns, name = job.team.namespace, manifests.job_name(job)
            obj = cache.get((ns, name))
            if obj is None:
                obj = self._read_job(ns, name)
            if obj is None:
                if job.backend_ref or job.state in ("admitted", "running"):
                    out.append(Observation(job.pk, "failed", now, "the Kubernetes Job was deleted outside the portal"))
                continue
            state, at, reason = job_phase(obj)
            if state and state != job.state:
                out.append(Observation(job.pk, state, at or now, reason))
        return out

    def _read_job(self, ns: str, name: str) -> dict | None:
        resp = call(
            f"read Job {ns}/{name}", self.batch.read_namespaced_job, name, ns, _preload_content=False, ok_status=(404,)
        )
        return None if isinstance(resp, ApiException) else self._json(resp)

    def _update_job(self, ns: str, name: str, mutate) -> dict:
        """Read, change and replace a Job with its resourceVersion; on 409 Conflict read again and retry."""
        for _ in range(CONFLICT_RETRIES):
            obj = self._read_job(ns, name)
            if obj is None:
                raise KubeRejected(f"Job {ns}/{name} is gone", status=404, reason="NotFound")
            if not mutate(obj):
                return obj
            resp = call(
                f"update Job {ns}/{name}",
                self.batch.replace_namespaced_job,
                name,
                ns,
                obj,
                _preload_content=False,
                ok_status=(409,),
            )
            if not isinstance(resp, ApiException):
                return self._json(resp)
            log.info("Job %s/%s changed while we updated it; reading it again", ns, name)
        raise ClusterUnreachable(f"Job {ns}/{name} kept changing ({CONFLICT_RETRIES} conflicts); will retry")

    @staticmethod
    def _instance_type(job, name: str | None):
        if not name:
            return None
        for candidate in (job.assigned_instance_type, job.instance_type):
            if candidate is not None and candidate.name == name:
                return candidate
        from quotas.models import InstanceType

        found = InstanceType.objects.filter(name=name).first()
        if found is None:
            raise KubeRejected(f"unknown instance type {name!r}", status=400)
        return found

    # -- inventory ------------------------------------------------------------------------------
    def inventory(self) -> list[InventoryItem]:
        nodes, token = [], None
        while True:
            kwargs = {"limit": 500, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            page = self._json(call("list nodes", self.core.list_node, **kwargs))
            nodes.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                break
        items, self.last_inventory_warnings = inventory_from_nodes(nodes)
        return items

    # -- Kueue ----------------------------------------------------------------------------------
    def workloads(self) -> list[WorkloadView]:
        """Kueue Workloads owned by Jobs, with reasons and queue positions."""
        page = call(
            "list Kueue workloads",
            self.custom.list_cluster_custom_object,
            KUEUE_GROUP,
            KUEUE_WORKLOAD_VERSION,
            "workloads",
        )
        views = [v for v in (workload_view(o) for o in page.get("items") or []) if v is not None]
        assign_positions(views)
        return views

    def apply_objects(self, objects: list[dict]) -> list[tuple[str, str, str]]:
        """Create or replace Kueue objects. Returns (kind, name, created|updated|unchanged) per object."""
        results = []
        for obj in objects:
            kind, meta = obj["kind"], obj["metadata"]
            group, version = obj["apiVersion"].split("/", 1)
            plural = KUEUE_PLURALS.get(kind) or kind.lower() + "s"
            ns = meta.get("namespace")
            if ns:
                self.ensure_namespace(ns, team_name=(meta.get("labels") or {}).get(manifests.LABEL_TEAM, ""))
            results.append((kind, meta["name"], self._apply_one(group, version, plural, ns, obj)))
        return results

    def _apply_one(self, group, version, plural, ns, obj) -> str:
        name = obj["metadata"]["name"]
        what = f"{obj['kind']} {ns + '/' if ns else ''}{name}"
        api = self.custom
        if ns:
            create = partial(api.create_namespaced_custom_object, group, version, ns, plural)
            get = partial(api.get_namespaced_custom_object, group, version, ns, plural, name)
            replace = partial(api.replace_namespaced_custom_object, group, version, ns, plural, name)
        else:
            create = partial(api.create_cluster_custom_object, group, version, plural)
            get = partial(api.get_cluster_custom_object, group, version, plural, name)
            replace = partial(api.replace_cluster_custom_object, group, version, plural, name)
        made = call(f"create {what}", create, obj, ok_status=(409,))
        if not isinstance(made, ApiException):
            return "created"
        for _ in range(CONFLICT_RETRIES):
            current = call(f"read {what}", get)
            if current.get("spec") == obj.get("spec") and _labels(current) == _labels(obj):
                return "unchanged"
            body = dict(obj, metadata=dict(obj["metadata"], resourceVersion=current["metadata"]["resourceVersion"]))
            done = call(f"replace {what}", replace, body, ok_status=(409,))
            if not isinstance(done, ApiException):
                return "updated"
        raise ClusterUnreachable(f"{what} kept changing ({CONFLICT_RETRIES} conflicts); try again")

    # -- connection check -----------------------------------------------------------------------
    def check(self) -> list[Check]:
        """Can the portal reach the API server, and may it do what it needs? One line per check."""
        checks: list[Check] = []
        try:
            version = client.VersionApi(self.api_client)
            info = call("read version", version.get_code)
            checks.append(Check("API server", True, f"{self.host}: Kubernetes {info.git_version}"))
        except (ClusterUnreachable, KubeRejected) as exc:
            return [Check("API server", False, str(exc))]
        for group, resource, verbs in required_permissions(self.mode):
            denied = [v for v in verbs if not self._allowed(group, resource, v)]
            label = f"{resource}.{group}" if group else resource
            checks.append(
                Check(
                    f"RBAC {label}",
                    not denied,
                    "allowed: " + ", ".join(verbs) if not denied else "missing: " + ", ".join(denied),
                )
            )
        if self.mode == "kueue":
            try:
                call(
                    "list ClusterQueues",
                    self.custom.list_cluster_custom_object,
                    KUEUE_GROUP,
                    KUEUE_WORKLOAD_VERSION,
                    "clusterqueues",
                    limit=1,
                )
                checks.append(Check("Kueue", True, "Kueue's API (kueue.x-k8s.io/v1beta1) answers"))
            except (ClusterUnreachable, KubeRejected) as exc:
                checks.append(Check("Kueue", False, f"Kueue's API does not answer; is Kueue installed? ({exc})"))
        return checks

    def _allowed(self, group: str, resource: str, verb: str) -> bool:
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"group": group, "resource": resource, "verb": verb}},
        }
        api = client.AuthorizationV1Api(self.api_client)
        review = call("access review", api.create_self_subject_access_review, body, _preload_content=False)
        return bool((self._json(review).get("status") or {}).get("allowed"))


def _labels(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("labels") or {}


def required_permissions(mode: str) -> list[tuple[str, str, list[str]]]:
    """Exactly what the backend calls; deploy/rbac.yaml grants these and `kube check` verifies them."""
    perms = [
        ("", "nodes", ["list"]),
        ("", "namespaces", ["get", "create"]),
        ("batch", "jobs", ["get", "list", "watch", "create", "update", "patch", "delete"]),
    ]
    if mode == "kueue":
        perms += [
            (KUEUE_GROUP, plural, ["get", "create", "update"])
            for plural in ("resourceflavors", "cohorts", "clusterqueues", "localqueues", "workloadpriorityclasses")
        ]
        perms.append((KUEUE_GROUP, "workloads", ["list"]))
    return perms
