"""The configuration as Kueue objects (kueue.x-k8s.io/v1beta1), named the way SageMaker HyperPod task
governance names them, so the Kubernetes backend can apply them to a cluster.

Mapping (portal -> Kueue):

- instance type            -> ResourceFlavor `<instance type name>`, nodeLabels node.kubernetes.io/instance-type
- team.cohort              -> Cohort `<cohort>`
- team                     -> ClusterQueue `hyperpod-ns-<team>-clusterqueue`, namespaceSelector = the team's namespace;
                              one resource group covering every resource of the cluster, one entry per flavor
                              (nominalQuota 0 where the team has no allocation, so it may still borrow there)
- allocation (resolved)    -> nominalQuota: accelerators as nvidia.com/gpu or aws.amazon.com/neurondevice,
                              cpu as vCPUs, memory as <n>Gi
- sharing LendAndBorrow    -> borrowingLimit = borrow limit % x nominal (none when no cap)
- sharing Lend             -> borrowingLimit 0
- sharing DontLend         -> borrowingLimit 0 and lendingLimit 0
- fair-share weight        -> fairSharing.weight (only when idle compute is "fair share"; with "fcfs" it is
                              left out and Kueue's classical, first-come borrowing applies)
- preempt own lower prio.  -> preemption.withinClusterQueue LowerPriority (only under task ranking; else Never)
- (always)                 -> preemption.reclaimWithinCohort Any: a team takes back quota it lent
- team namespace           -> LocalQueue `hyperpod-ns-<team>-localqueue` in that namespace
- priority class           -> WorkloadPriorityClass `<name>`, value = weight
"""

import yaml

from quotas.models import (
    ClusterPolicy,
    ComputeAllocation,
    IdleCompute,
    InstanceType,
    PreemptTeamTasks,
    PriorityClass,
    Sharing,
    TaskPrioritization,
    Team,
)

API_VERSION = "kueue.x-k8s.io/v1beta1"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
RESOURCE_NAMES = {"gpu": "nvidia.com/gpu", "neuron": "aws.amazon.com/neurondevice", "cpu": "cpu", "memory": "memory"}
RESOURCE_ORDER = ["cpu", "memory", "gpu", "neuron"]
MAX_FLAVORS_PER_GROUP = 64


def cluster_queue_name(team: Team) -> str:
    return f"hyperpod-ns-{team.name}-clusterqueue"


def local_queue_name(team: Team) -> str:
    return f"hyperpod-ns-{team.name}-localqueue"


def quantity(resource: str, amount: float):
    """Kubernetes quantities: whole numbers as integers, memory in Gi, fractions as decimal strings."""
    amount = max(0.0, float(amount))
    text = f"{amount:.3f}".rstrip("0").rstrip(".")
    if resource == "memory":
        return f"{text}Gi"
    return int(amount) if amount.is_integer() else text


def _weight(value: float):
    return int(value) if float(value).is_integer() else f"{value:.3f}".rstrip("0").rstrip(".")


def _flavor_quota(team: Team, resolved: dict[str, float], resources: list[str], pct_share) -> list[dict]:
    entries = []
    for resource in resources:
        nominal = resolved.get(resource, 0.0)
        entry = {"name": RESOURCE_NAMES[resource], "nominalQuota": quantity(resource, nominal)}
        if team.sharing == Sharing.LEND_AND_BORROW:
            if pct_share is not None:
                entry["borrowingLimit"] = quantity(resource, nominal * pct_share)
        else:
            entry["borrowingLimit"] = quantity(resource, 0)
        if team.sharing == Sharing.DONT_LEND:
            entry["lendingLimit"] = quantity(resource, 0)
        entries.append(entry)
    return entries


def kueue_objects() -> list[dict]:
    """Every Kueue object for the current configuration, in the order they should be applied."""
    policy = ClusterPolicy.load()
    types = list(InstanceType.objects.order_by("name"))
    if len(types) > MAX_FLAVORS_PER_GROUP:
        raise ValueError(f"Kueue allows at most {MAX_FLAVORS_PER_GROUP} flavors in a resource group")
    teams = list(Team.objects.order_by("name"))
    quota: dict[int, dict[int, dict]] = {}
    for alloc in ComputeAllocation.objects.select_related("instance_type"):
        quota.setdefault(alloc.team_id, {})[alloc.instance_type_id] = alloc.resolved()
    present = {r for it in types for r in it.capacity()}
    resources = [r for r in RESOURCE_ORDER if r in present]

    objects: list[dict] = []
    for it in types:
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": "ResourceFlavor",
                "metadata": {"name": it.name},
                "spec": {"nodeLabels": {INSTANCE_TYPE_LABEL: it.name}},
            }
        )
    for cohort in sorted({t.cohort for t in teams if t.cohort}):
        objects.append({"apiVersion": API_VERSION, "kind": "Cohort", "metadata": {"name": cohort}, "spec": {}})
    for team in teams:
        team_quota = quota.get(team.pk, {})
        pct_share = team.borrow_limit_pct / 100.0 if team.borrow_limit_pct is not None else None
        flavors = [
            {
                "name": it.name,
                "resources": _flavor_quota(team, team_quota.get(it.pk, {}), resources, pct_share),
            }
            for it in types
        ]
        within = (
            "LowerPriority"
            if policy.task_prioritization == TaskPrioritization.TASK_RANKING
            and team.preempt_team_tasks == PreemptTeamTasks.LOWER_PRIORITY
            else "Never"
        )
        spec = {
            "cohort": team.cohort,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team.namespace}},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": within},
        }
        if resources and types:
            spec["resourceGroups"] = [{"coveredResources": [RESOURCE_NAMES[r] for r in resources], "flavors": flavors}]
        if policy.idle_compute == IdleCompute.FAIR_SHARE:
            spec["fairSharing"] = {"weight": _weight(team.fair_share_weight)}
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": "ClusterQueue",
                "metadata": {
                    "name": cluster_queue_name(team),
                    "labels": {"portal/team": team.name},
                    # Kueue has no backfill reservations (StrictFIFO blocks everything behind the head instead):
                    # the portal's policy is recorded for readers; the queue stays BestEffortFIFO.
                    "annotations": {"portal/backfill": str(policy.backfill)},
                },
                "spec": spec,
            }
        )
    for team in teams:
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": "LocalQueue",
                "metadata": {"name": local_queue_name(team), "namespace": team.namespace},
                "spec": {"clusterQueue": cluster_queue_name(team)},
            }
        )
    for pc in PriorityClass.objects.order_by("-weight", "name"):
        obj = {
            "apiVersion": API_VERSION,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": pc.name},
            "value": pc.weight,
        }
        if pc.description:
            obj["description"] = pc.description
        objects.append(obj)
    return objects


def kueue_yaml() -> str:
    return yaml.safe_dump_all(kueue_objects(), sort_keys=False, default_flow_style=False)
