import pytest

from quotas.demo import DEMO_PASSWORD, demo_load
from quotas.models import ComputeAllocation, InstanceType, NodeGroup, PriorityClass, Role, Team, User

pytestmark = pytest.mark.django_db


def test_demo_data_is_realistic_and_idempotent():
    demo_load()
    counts = [
        InstanceType.objects.count(),
        NodeGroup.objects.count(),
        Team.objects.count(),
        ComputeAllocation.objects.count(),
        User.objects.count(),
        PriorityClass.objects.count(),
    ]
    demo_load()
    assert counts == [
        InstanceType.objects.count(),
        NodeGroup.objects.count(),
        Team.objects.count(),
        ComputeAllocation.objects.count(),
        User.objects.count(),
        PriorityClass.objects.count(),
    ]
    p5 = InstanceType.objects.get(name="ml.p5.48xlarge")
    assert (p5.accelerators, p5.vcpus, p5.memory_gib) == (8, 192, 2048)
    trn = InstanceType.objects.get(name="ml.trn1.32xlarge")
    assert trn.accelerator_resource == "neuron" and trn.accelerators == 16
    assert Team.objects.count() >= 5
    assert {u.role for u in User.objects.all()} == {Role.ADMIN, Role.MANAGER, Role.SCIENTIST}
    assert User.objects.get(username="sam").check_password(DEMO_PASSWORD)
    # proportional defaults filled by the engine's function: 32 of the p5's GPUs
    alloc = ComputeAllocation.objects.get(team__name="llm-pretraining", instance_type=p5)
    assert alloc.resolved() == {"gpu": 32, "cpu": 768, "memory": 8192}
