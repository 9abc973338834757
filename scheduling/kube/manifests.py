"""What the portal writes to Kubernetes, as plain dicts shaped like the API's JSON.

Pure functions of a job: the same job always gives the same Job object and name, so creating it twice
finds the first one (409 AlreadyExists) instead of running it twice.
"""

import re

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "gpu-quota-portal"
LABEL_TEAM = "portal.gpu-quota.io/team"
LABEL_JOB_ID = "portal.gpu-quota.io/job-id"
LABEL_PRIORITY = "portal.gpu-quota.io/priority-class"
LABEL_QUEUE = "kueue.x-k8s.io/queue-name"
LABEL_KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
JOB_SELECTOR = f"{MANAGED_BY}={MANAGER}"

# The engine's accelerator names, as Kubernetes extended resources and the taints their nodes carry.
ACCELERATOR_RESOURCES = {"gpu": "nvidia.com/gpu", "neuron": "aws.amazon.com/neurondevice"}
ACCELERATOR_TAINTS = {"gpu": "nvidia.com/gpu", "neuron": "aws.amazon.com/neuron"}


def job_name(job) -> str:
    """The Kubernetes name of a job: `job-<id>-<name slug>`, at most 63 characters (a valid label value)."""
    slug = re.sub(r"[^a-z0-9-]+", "-", (job.name or "").lower()).strip("-")
    return f"job-{job.pk}-{slug}"[:63].rstrip("-") if slug else f"job-{job.pk}"


def job_ref(job) -> str:
    return f"{job.team.namespace}/{job_name(job)}"


def local_queue_name(team_name: str) -> str:
    return f"hyperpod-ns-{team_name}-localqueue"


def cluster_queue_name(team_name: str) -> str:
    return f"hyperpod-ns-{team_name}-clusterqueue"


def quantity(value: float, unit: str = "") -> str:
    """A Kubernetes quantity: whole numbers as such, fractions of CPUs in millicores."""
    if float(value).is_integer():
        return f"{int(value)}{unit}"
    if not unit:
        return f"{round(value * 1000)}m"
    return f"{round(value * 1024)}Mi" if unit == "Gi" else f"{value}{unit}"


def accelerator_key(job, instance_type=None) -> str:
    it = instance_type or job.assigned_instance_type or job.instance_type
    return (it.accelerator_resource if it is not None else "") or ("gpu" if job.accelerators else "")


def pod_resources(job, instance_type=None) -> dict:
    amounts: dict[str, str] = {}
    key = accelerator_key(job, instance_type)
    if job.accelerators and key:
        amounts[ACCELERATOR_RESOURCES[key]] = str(int(job.accelerators))
    if job.vcpus:
        amounts["cpu"] = quantity(job.vcpus)
    if job.memory_gib:
        amounts["memory"] = quantity(job.memory_gib, "Gi")
    # Requests equal limits: extended resources demand it, and it makes the pods Guaranteed.
    return {"requests": dict(amounts), "limits": dict(amounts)}


def placement(job, instance_type=None) -> dict:
    """nodeSelector and tolerations for an instance type (None: let the admitter choose)."""
    if instance_type is None:
        key = accelerator_key(job)
        return {"nodeSelector": {}, "tolerations": tolerations(key)}
    return {
        "nodeSelector": {INSTANCE_TYPE_LABEL: instance_type.name},
        "tolerations": tolerations(accelerator_key(job, instance_type)),
    }


def tolerations(key: str) -> list[dict]:
    if key not in ACCELERATOR_TAINTS:
        return []
    return [{"key": ACCELERATOR_TAINTS[key], "operator": "Exists", "effect": "NoSchedule"}]


def job_labels(job, *, mode: str, queue_label_in_portal_mode: bool = False) -> dict:
    labels = {
        MANAGED_BY: MANAGER,
        LABEL_TEAM: job.team.name,
        LABEL_JOB_ID: str(job.pk),
    }
    if job.priority_class_id:
        labels[LABEL_PRIORITY] = job.priority_class.name
    if mode == "kueue" or queue_label_in_portal_mode:
        labels[LABEL_QUEUE] = local_queue_name(job.team.name)
    if mode == "kueue" and job.priority_class_id:
        labels[LABEL_KUEUE_PRIORITY] = job.priority_class.name
    return labels


def pod_labels(labels: dict) -> dict:
    # Kueue labels stay on the Job: on pods they would invite Kueue's pod integration to manage them too.
    return {k: v for k, v in labels.items() if not k.startswith("kueue.x-k8s.io/")}


def job_manifest(job, *, mode: str, instance_type=None, queue_label_in_portal_mode: bool = False) -> dict:
    """The batch/v1 Job for a portal job, created suspended; the admitter unsuspends it."""
    labels = job_labels(job, mode=mode, queue_label_in_portal_mode=queue_label_in_portal_mode)
    container = {
        "name": "main",
        "image": job.image,
        "resources": pod_resources(job, instance_type),
        "env": [{"name": "PORTAL_JOB_ID", "value": str(job.pk)}, {"name": "PORTAL_TEAM", "value": job.team.name}],
    }
    if job.command.strip():
        container["command"] = ["/bin/sh", "-c", job.command]
    place = placement(job, instance_type)
    pod_spec = {"restartPolicy": "Never", "containers": [container], "tolerations": place["tolerations"]}
    if place["nodeSelector"]:
        pod_spec["nodeSelector"] = place["nodeSelector"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(job),
            "namespace": job.team.namespace,
            "labels": labels,
            "annotations": {"portal.gpu-quota.io/job-name": job.name[:253]},
        },
        "spec": {
            "suspend": True,
            "parallelism": job.pods,
            "completions": job.pods,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": {"metadata": {"labels": pod_labels(labels)}, "spec": pod_spec},
        },
    }


def namespace_manifest(name: str, team_name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {MANAGED_BY: MANAGER, LABEL_TEAM: team_name}},
    }
