"""Demo data: a realistic mid-size cluster, teams with allocations, and users of every role.

Idempotent: loading twice changes nothing; existing rows are updated to the demo values.
"""

from django.db import transaction

from quotas.models import (
    ClusterPolicy,
    ComputeAllocation,
    InstanceType,
    NodeGroup,
    PriorityClass,
    Role,
    Team,
    User,
)

DEMO_PASSWORD = "demo-portal-2026"

INSTANCE_TYPES = [
    # name, family, accelerator kind, resource, accelerators, vCPUs, GiB, EFA, nodes
    ("ml.p5.48xlarge", "p5", "NVIDIA H100", "gpu", 8, 192, 2048, 32, 8),
    ("ml.p4d.24xlarge", "p4d", "NVIDIA A100", "gpu", 8, 96, 1152, 4, 6),
    ("ml.g6.12xlarge", "g6", "NVIDIA L4", "gpu", 4, 48, 192, 0, 8),
    ("ml.g5.2xlarge", "g5", "NVIDIA A10G", "gpu", 1, 8, 32, 0, 16),
    ("ml.trn1.32xlarge", "trn1", "AWS Trainium (Neuron)", "neuron", 16, 128, 512, 8, 4),
    ("ml.c5.2xlarge", "c5", "", "", 0, 8, 16, 0, 20),
]

TEAMS = [
    # name, description, weight, sharing, borrow limit %, preempt own lower priority
    ("llm-pretraining", "Foundation-model pre-training", 4, "LendAndBorrow", 50, "LowerPriority"),
    ("vision", "Computer vision models", 2, "LendAndBorrow", 100, "LowerPriority"),
    ("speech", "Speech recognition and TTS", 2, "LendAndBorrow", None, "Never"),
    ("recsys", "Recommendations and ranking", 1, "Lend", None, "LowerPriority"),
    ("inference", "Online inference platform", 3, "DontLend", None, "LowerPriority"),
    ("research", "Exploratory research; takes only idle capacity beyond its quota", 0, "LendAndBorrow", None, "Never"),
]

# team -> {instance type: allocation fields}
ALLOCATIONS = {
    "llm-pretraining": {"ml.p5.48xlarge": {"accelerators": 32}, "ml.trn1.32xlarge": {"instances": 2}},
    "vision": {"ml.p4d.24xlarge": {"accelerators": 16}, "ml.g5.2xlarge": {"accelerators": 6}},
    "speech": {"ml.p4d.24xlarge": {"accelerators": 16}, "ml.g6.12xlarge": {"accelerators": 8}},
    "recsys": {"ml.g6.12xlarge": {"accelerators": 12, "memory_gib": 512}, "ml.c5.2xlarge": {"instances": 10}},
    "inference": {"ml.p5.48xlarge": {"accelerators": 16}, "ml.g5.2xlarge": {"accelerators": 8}},
    "research": {
        "ml.p5.48xlarge": {"accelerators": 8},
        "ml.g6.12xlarge": {"accelerators": 4},
        "ml.trn1.32xlarge": {"accelerators": 16},
    },
}

PRIORITY_CLASSES = [
    ("inference-priority", 100, "Online serving; preempts training where the team allows it"),
    ("fine-tuning-priority", 75, "Fine-tuning runs"),
    ("training-priority", 50, "Training runs"),
    ("experimentation-priority", 10, "Notebooks and experiments"),
]

USERS = [
    # username, full name, role, teams
    ("admin", "Ada Admin", Role.ADMIN, []),
    ("manager", "Maya Manager", Role.MANAGER, []),
    ("sam", "Sam Scientist", Role.SCIENTIST, ["llm-pretraining", "research"]),
    ("lin", "Lin Vision", Role.SCIENTIST, ["vision"]),
    ("omar", "Omar Speech", Role.SCIENTIST, ["speech"]),
    ("rita", "Rita Recsys", Role.SCIENTIST, ["recsys", "inference"]),
    ("ivan", "Ivan Inference", Role.SCIENTIST, ["inference"]),
    ("rosa", "Rosa Research", Role.SCIENTIST, ["research", "vision"]),
]


@transaction.atomic
def demo_load() -> dict:
    """Create or update the demo cluster, teams, allocations, priority classes and users."""
    types = {}
    for name, family, kind, resource, acc, vcpus, mem, efa, nodes in INSTANCE_TYPES:
        it, _ = InstanceType.objects.update_or_create(
            name=name,
            defaults=dict(
                family=family,
                accelerator_kind=kind,
                accelerator_resource=resource,
                accelerators=acc,
                vcpus=vcpus,
                memory_gib=mem,
                efa_interfaces=efa,
            ),
        )
        NodeGroup.objects.update_or_create(name=f"{family}-nodes", defaults=dict(instance_type=it, node_count=nodes))
        types[name] = it

    teams = {}
    for name, description, weight, sharing, pct, preempt in TEAMS:
        teams[name], _ = Team.objects.update_or_create(
            name=name,
            defaults=dict(
                namespace=f"hyperpod-ns-{name}",
                description=description,
                fair_share_weight=weight,
                sharing=sharing,
                borrow_limit_pct=pct,
                preempt_team_tasks=preempt,
            ),
        )
    for team_name, allocations in ALLOCATIONS.items():
        for type_name, fields in allocations.items():
            values = {"instances": None, "accelerators": None, "vcpus": None, "memory_gib": None, **fields}
            ComputeAllocation.objects.update_or_create(
                team=teams[team_name], instance_type=types[type_name], defaults=values
            )

    for name, weight, description in PRIORITY_CLASSES:
        PriorityClass.objects.update_or_create(name=name, defaults=dict(weight=weight, description=description))
    ClusterPolicy.load()

    for username, full_name, role, team_names in USERS:
        first, last = full_name.split(" ", 1)
        user, created = User.objects.get_or_create(
            username=username,
            defaults=dict(first_name=first, last_name=last, role=role, email=f"{username}@example.com"),
        )
        if created:
            user.set_password(DEMO_PASSWORD)
        user.role = role
        user.is_staff = role == Role.ADMIN
        user.is_superuser = role == Role.ADMIN
        user.save()
        user.teams.set([teams[t] for t in team_names])

    return {
        "instance_types": len(types),
        "teams": len(teams),
        "users": [(u, r.value) for u, _, r, _ in USERS],
        "password": DEMO_PASSWORD,
    }
