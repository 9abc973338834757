from datetime import timedelta

import pytest
from django.utils import timezone

from quotas.demo import demo_load
from scheduling.demo_traffic import OPENING_BURST, trace
from scheduling.loop import admission_run
from scheduling.models import Job, JobState
from scheduling.tasks import demo_traffic_tick

pytestmark = pytest.mark.django_db


def test_the_sample_is_a_few_thousand_philly_rows():
    rows = trace()
    assert 2000 <= len(rows) <= 5000
    assert rows == sorted(rows, key=lambda r: r.offset_s)
    assert {r.gpus for r in rows} >= {1, 2, 4, 8, 16}


def test_demo_traffic_fills_the_cluster_with_valid_jobs_of_the_demo_scientists(settings):
    settings.DEMO_TRAFFIC = True
    demo_load()
    assert demo_traffic_tick()["submitted"] >= OPENING_BURST * 0.9
    jobs = Job.objects.all()
    assert {j.submitted_by.role for j in jobs} == {"scientist"}
    assert all(j.team.members.filter(pk=j.submitted_by_id).exists() for j in jobs)
    assert len({j.team.name for j in jobs}) >= 3 and all(j.priority_class_id for j in jobs)
    admission_run()
    assert Job.objects.filter(state=JobState.RUNNING).exists()
    from scheduling.demo_traffic import demo_traffic_step

    assert demo_traffic_step(now=timezone.now() + timedelta(seconds=20)) > 0


def test_demo_traffic_is_off_unless_asked(settings):
    settings.DEMO_TRAFFIC = False
    demo_load()
    assert demo_traffic_tick()["submitted"] == 0
    assert not Job.objects.exists()


def test_a_team_that_never_borrows_is_never_sent_a_gang_larger_than_its_quota():
    """Inference (DontLend, 16 p5 GPUs) was sent 4 x 8-GPU gangs from the trace: each waited forever at the head of
    its queue. Every trace row mapped to a team that cannot borrow fits that team's quota on its instance type."""
    from quotas.models import ComputeAllocation, Sharing
    from scheduling.demo_traffic import shape

    demo_load()
    allocations: dict[str, list] = {}
    for alloc in ComputeAllocation.objects.select_related("team", "instance_type"):
        allocations.setdefault(alloc.team.name, []).append(alloc)
    checked = 0
    for team, allocs in allocations.items():
        if allocs[0].team.sharing == Sharing.LEND_AND_BORROW:
            continue
        for row in trace():
            sizes = shape(row, allocs, team)
            if sizes is None:
                continue
            alloc = next(a for a in allocs if a.instance_type.name == sizes["instance_type"])
            quota = (
                alloc.accelerators
                if alloc.accelerators is not None
                else alloc.instances * alloc.instance_type.accelerators
            )
            assert sizes["pods"] * sizes["accelerators"] <= quota, (team, row)
            checked += 1
    assert checked > 100
