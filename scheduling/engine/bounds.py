"""The portal's limits, one place each (pure Python: the engine, the models and the scenario reader share them).

Every typed number a person can give (a node count, a quota, a job's request, a date, a page size) has a
bound here, chosen from real clusters with room to spare, so that no typo or hostile value can stall the
engine (nodes are tracked one by one) or overflow arithmetic. The README explains each figure.
"""

from __future__ import annotations

import math

# Nodes. Kubernetes is tested to 5,000 nodes; the largest managed clusters reach 15,000 (GKE) to 100,000
# (EKS, announced 2025), and a 16,384-GPU training run (Llama 3 405B) needs 2,048 eight-GPU nodes. The
# engine tracks nodes one by one, so the portal caps a cluster at 20,000 nodes: in total and per node group.
MAX_CLUSTER_NODES = 20_000
MAX_NODES_PER_GROUP = MAX_CLUSTER_NODES
MAX_TEAMS = 1_000

# One node. The largest accelerator nodes have 8 GPUs (p5, p4d) or 16 Neuron devices (trn1/trn2); the
# largest EC2 instance (u7in-32tb.224xlarge) has 896 vCPUs and 32 TiB; 400 Gb/s nodes carry 32 EFA devices.
MAX_ACCELERATORS_PER_NODE = 64
MAX_VCPUS_PER_NODE = 1_024
MAX_MEMORY_GIB_PER_NODE = 32_768
MAX_EFA_PER_NODE = 64

# A quota on one instance type can exceed the cluster (the portal warns, the engine lends), but never
# more than the largest allowed cluster of the largest allowed node.
MAX_QUOTA_INSTANCES = MAX_CLUSTER_NODES
MAX_QUOTA_ACCELERATORS = MAX_ACCELERATORS_PER_NODE * MAX_CLUSTER_NODES
MAX_QUOTA_VCPUS = MAX_VCPUS_PER_NODE * MAX_CLUSTER_NODES
MAX_QUOTA_MEMORY_GIB = MAX_MEMORY_GIB_PER_NODE * MAX_CLUSTER_NODES

# Kubernetes counts CPU in millicores and memory in bytes; 0.001 (a millicore; about 1 MiB) is the
# smallest amount that means anything. Smaller positive numbers (1e-320) are refused: they underflow.
MIN_QUANTITY = 0.001

# A job: one pod per node of the largest cluster; 90 days covers the longest job in Microsoft's Philly
# trace (54 days) and the longest published training runs.
MAX_PODS_PER_JOB = MAX_CLUSTER_NODES
MAX_DURATION_S = 90 * 86_400

# Team policy. Kubernetes' user-defined PriorityClass values are at most 1,000,000,000.
MAX_FAIR_SHARE_WEIGHT = 1_000
MAX_BORROW_LIMIT_PCT = 10_000
MAX_PRIORITY = 1_000_000_000

# Dates (usage ranges, report filters): the portal's data starts after 2000; 2100 leaves room to plan.
MIN_YEAR = 2000
MAX_YEAR = 2100

# Lists: a page of the API holds at most this many rows; offsets stay far below PostgreSQL's bigint.
MAX_PAGE_SIZE = 1_000
MAX_OFFSET = 1_000_000_000

# JSON bodies: no legitimate request nests deeper than this (a team's allocations are 3 levels).
MAX_JSON_DEPTH = 32


def quantity_problem(value, maximum: float, *, whole: bool = False) -> str | None:
    """Why a resource amount is not acceptable (None when it is): finite, 0 or at least MIN_QUANTITY,
    at most `maximum`, whole where asked."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number"
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    if value < 0:
        return "must be zero or more"
    if whole and value != int(value):
        return "must be a whole number"
    if 0 < value < MIN_QUANTITY:
        return f"must be 0 or at least {MIN_QUANTITY:g}"
    if value > maximum:
        return f"must be at most {maximum:,}"
    return None


def json_depth_exceeds(value, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when a parsed JSON value nests deeper than `limit` (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
