"""Reading what the cluster reports: Job status, nodes, Kueue Workloads. Pure functions over API JSON."""

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kubernetes.utils import parse_quantity

from scheduling.backends.base import InventoryItem

from .manifests import ACCELERATOR_RESOURCES, INSTANCE_TYPE_LABEL

NODE_GROUP_LABELS = (
    "sagemaker.amazonaws.com/instance-group-name",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
)
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


def parse_time(value) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def true_conditions(obj: dict) -> dict[str, dict]:
    conds = (obj.get("status") or {}).get("conditions") or []
    return {c.get("type"): c for c in conds if c.get("status") == "True"}


def job_phase(obj: dict) -> tuple[str | None, datetime | None, str]:
    """(state, since when, reason) of a batch/v1 Job: running, succeeded, failed, or None (not started)."""
    status = obj.get("status") or {}
    conds = true_conditions(obj)
    for kind in ("Complete", "SuccessCriteriaMet"):
        if kind in conds:
            at = parse_time(status.get("completionTime")) or parse_time(conds[kind].get("lastTransitionTime"))
            return "succeeded", at, "all pods completed"
    for kind in ("Failed", "FailureTarget"):
        if kind in conds:
            cond = conds[kind]
            words = ": ".join(x for x in (cond.get("reason"), cond.get("message")) if x)
            return "failed", parse_time(cond.get("lastTransitionTime")), words or "the Job failed"
    if (obj.get("spec") or {}).get("suspend"):
        return None, None, ""
    started = status.get("ready") if "ready" in status else status.get("active")
    if started:
        return "running", parse_time(status.get("startTime")), ""
    return None, None, ""


def node_group_of(labels: dict, instance_type: str) -> str:
    for key in NODE_GROUP_LABELS:
        if labels.get(key):
            return labels[key][:64]
    return instance_type[:64]


def node_ready(node: dict) -> bool:
    conds = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
    return ready and not (node.get("spec") or {}).get("unschedulable")


def node_resources(node: dict) -> dict:
    status = node.get("status") or {}
    capacity, allocatable = status.get("capacity") or {}, status.get("allocatable") or {}
    out = {"accelerator_resource": "", "accelerators": 0}
    for key, resource in ACCELERATOR_RESOURCES.items():
        amount = int(parse_quantity(allocatable.get(resource, "0")))
        if amount:
            out = {"accelerator_resource": key, "accelerators": amount}
            break
    out["vcpus"] = int(parse_quantity(capacity.get("cpu", allocatable.get("cpu", "0"))))
    memory = parse_quantity(capacity.get("memory", allocatable.get("memory", "0")))
    out["memory_gib"] = int(round(memory / 2**30))
    out["allocatable_cpu"] = float(parse_quantity(allocatable.get("cpu", "0")))
    out["allocatable_memory_gib"] = round(float(parse_quantity(allocatable.get("memory", "0"))) / 2**30, 1)
    return out


def _shape(res: dict) -> tuple:
    return res["accelerator_resource"], res["accelerators"], res["vcpus"], res["memory_gib"]


def inventory_from_nodes(nodes: list[dict]) -> tuple[list[InventoryItem], list[str]]:
    """Node groups from Node objects, and warnings (nodes without an instance type, uneven nodes)."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    warnings: list[str] = []
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        name = (node.get("metadata") or {}).get("name", "?")
        itype = labels.get(INSTANCE_TYPE_LABEL)
        if not itype:
            warnings.append(f"node {name} has no {INSTANCE_TYPE_LABEL} label; it is not counted")
            continue
        res = node_resources(node)
        res.update(ready=node_ready(node), product=labels.get(GPU_PRODUCT_LABEL, ""), name=name)
        groups[(itype, node_group_of(labels, itype))].append(res)
    items = []
    for (itype, group), members in sorted(groups.items()):
        # The most common shape is the instance type's; a node with a failed GPU shows up as uneven.
        shape = Counter(_shape(m) for m in members).most_common(1)[0][0]
        uneven = sorted(m["name"] for m in members if _shape(m) != shape)
        if uneven:
            warnings.append(f"{itype}: nodes {', '.join(uneven)} differ from the others in the group")
        items.append(
            InventoryItem(
                instance_type=itype,
                node_count=len(members),
                accelerator_resource=shape[0],
                accelerators=shape[1],
                vcpus=shape[2],
                memory_gib=shape[3],
                extra={
                    "node_group": group,
                    "ready": sum(1 for m in members if m["ready"]),
                    "accelerator_kind": next((m["product"] for m in members if m["product"]), ""),
                    "allocatable_cpu": min(m["allocatable_cpu"] for m in members),
                    "allocatable_memory_gib": min(m["allocatable_memory_gib"] for m in members),
                    "uneven_nodes": uneven,
                },
            )
        )
    return items, warnings


@dataclass
class WorkloadView:
    """A Kueue Workload as the portal shows it."""

    namespace: str
    name: str
    job_name: str
    queue: str = ""
    cluster_queue: str = ""
    priority: int = 0
    created: datetime | None = None
    quota_reserved: bool = False
    admitted: bool = False
    evicted: bool = False
    finished: bool = False
    reason: str = ""
    requeue_count: int = 0
    requeue_at: datetime | None = None
    position: int | None = None
    conditions: list = field(default_factory=list)


def workload_view(obj: dict) -> WorkloadView | None:
    meta = obj.get("metadata") or {}
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job"), None)
    if owner is None:
        return None
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    conds = true_conditions(obj)
    all_conds = status.get("conditions") or []
    requeue = status.get("requeueState") or {}
    view = WorkloadView(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        job_name=owner.get("name", ""),
        queue=spec.get("queueName", ""),
        cluster_queue=(status.get("admission") or {}).get("clusterQueue", ""),
        priority=int(spec.get("priority") or 0),
        created=parse_time(meta.get("creationTimestamp")),
        quota_reserved="QuotaReserved" in conds,
        admitted="Admitted" in conds,
        evicted="Evicted" in conds,
        finished="Finished" in conds,
        requeue_count=int(requeue.get("count") or 0),
        requeue_at=parse_time(requeue.get("requeueAt")),
        conditions=[
            {k: c.get(k, "") for k in ("type", "status", "reason", "message", "lastTransitionTime")} for c in all_conds
        ],
    )
    view.reason = workload_reason(view, all_conds)
    return view


def workload_reason(view: WorkloadView, conditions: list[dict]) -> str:
    by_type = {c.get("type"): c for c in conditions}

    def words(kind):
        c = by_type.get(kind) or {}
        return ": ".join(x for x in (c.get("reason"), c.get("message")) if x)

    if view.finished:
        return "finished"
    if view.evicted:
        text = f"evicted by Kueue ({words('Evicted')})"
    elif view.admitted:
        return f"admitted by Kueue to {view.cluster_queue}" if view.cluster_queue else "admitted by Kueue"
    elif view.quota_reserved:
        return f"quota reserved in {view.cluster_queue}, waiting for admission checks"
    elif "QuotaReserved" in by_type:
        text = f"waiting in Kueue: {(by_type['QuotaReserved'].get('message') or words('QuotaReserved'))}"
    else:
        text = "waiting for Kueue to consider it"
    if view.requeue_count:
        text += f"; requeued {view.requeue_count} time(s)"
        if view.requeue_at:
            text += f", next try at {view.requeue_at:%Y-%m-%d %H:%M:%S} UTC"
    return text


def assign_positions(views: list[WorkloadView]) -> None:
    """Queue positions among pending workloads of each LocalQueue, in Kueue's order: priority, then age."""
    queues: dict[tuple[str, str], list[WorkloadView]] = defaultdict(list)
    for view in views:
        if not (view.quota_reserved or view.admitted or view.finished):
            queues[(view.namespace, view.queue)].append(view)
    far_past = datetime.min.replace(tzinfo=UTC)
    for pending in queues.values():
        pending.sort(key=lambda v: (-v.priority, v.created or far_past, v.name))
        for i, view in enumerate(pending, start=1):
            view.position = i
