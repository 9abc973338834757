import pytest

from quotas.models import PriorityClass
from scheduling.services import JobRequest, job_submit


@pytest.fixture
def priorities(db):
    return {
        "high": PriorityClass.objects.create(name="high", weight=100),
        "low": PriorityClass.objects.create(name="low", weight=10),
    }


@pytest.fixture
def submit():
    """submit(user, team=..., **fields) -> Job, through the service (no loop run: tests call it)."""

    def do(user, team, name="train", **fields):
        values = dict(team=team.name, name=name, image="pytorch:2", accelerators=1, vcpus=4, memory_gib=32)
        values.update(fields)
        return job_submit(user=user, request=JobRequest(**values))

    return do
