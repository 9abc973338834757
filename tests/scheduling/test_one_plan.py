"""One plan, everywhere: the job page, the API, `jobs show`, `jobs list --start` and the console client's
source all read a waiting job's start from the engine's plan, and they agree with each other and with it."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from quotas.models import ComputeAllocation, Team
from scheduling import engine, selectors
from scheduling.models import Job, JobState
from scheduling.snapshot import build_snapshot
from tests.conftest import make_user


@pytest.fixture
def gang_world(db, p5):
    """2 p5 nodes. r1 (8 GPUs, node 0) ends in 600 s, r2 (4 GPUs, node 1) in 300 s; the gang (2 x 8) can start
    only when both have ended: reserved at +600 s, when r1 ends. A 4-GPU job of 1200 s behind it would push
    the gang back and waits; its estimate is after the gang."""
    team = Team.objects.create(name="llm", namespace="hyperpod-ns-llm")
    ComputeAllocation.objects.create(team=team, instance_type=p5, accelerators=16)
    user = make_user("lena", "scientist", [team])
    now = timezone.now()

    def job(name, gpus, pods=1, state=JobState.PENDING, node=None, duration=600, ago=0):
        placed = node is not None
        return Job.objects.create(
            team=team, submitted_by=user, name=name, accelerators=gpus, vcpus=gpus, memory_gib=8 * gpus, pods=pods,
            image="pytorch:2", expected_duration_s=duration, state=state, instance_type=p5,
            assigned_instance_type=p5 if placed else None, placement=[node] * pods if placed else None,
            admitted_at=now - timedelta(seconds=ago) if placed else None,
            started_at=now - timedelta(seconds=ago) if placed else None,
            submitted_at=now - timedelta(seconds=1000 + ago),
        )  # fmt: skip

    running = [
        job("r1", 8, state=JobState.RUNNING, node=0, duration=700, ago=100),
        job("r2", 4, state=JobState.RUNNING, node=1, duration=400, ago=100),
    ]
    gang = job("gang", 8, pods=2, duration=600, ago=50)
    long = job("long", 4, duration=1200, ago=40)
    return {"user": user, "team": team, "gang": gang, "long": long, "running": running}


def test_the_gang_is_reserved_when_r1_ends_and_every_door_says_so(gang_world, client, settings):
    settings.SIMULATED_TIME_SCALE = 1.0
    gang, long, user = gang_world["gang"], gang_world["long"], gang_world["user"]
    decisions = engine.decide(build_snapshot())
    assert decisions.admissions == []  # long would delay the gang's reservation
    plan = decisions.plans[str(gang.pk)]
    r1 = gang_world["running"][0]
    assert plan.head and plan.waits_for == [str(r1.pk)]
    expected = r1.admitted_at + timedelta(seconds=700)
    assert abs(plan.planned_start - expected.timestamp()) < 1
    assert "reservation" in decisions.reasons[str(long.pk)] and f"#{gang.pk}" in decisions.reasons[str(long.pk)]

    page = selectors.job_plan(gang)
    assert page.estimate.kind == "reserved" and abs((page.estimate.at - expected).total_seconds()) < 1
    assert f"when job #{r1.pk} ends" in page.estimate.note
    assert page.place.in_team == 1 and page.place.team_queued == 2

    later = selectors.job_plan(long)
    assert later.estimate.kind == "estimate" and later.estimate.at >= expected + timedelta(seconds=599)
    assert later.place.in_team == 2

    client.force_login(user)
    body = client.get(reverse("jobs:job-detail", args=[gang.pk])).content.decode()
    assert 'data-kind="reserved"' in body and "Reserved start" in body
    api = client.get(f"/api/jobs/{gang.pk}/").json()
    assert api["estimated_start"]["kind"] == "reserved" and api["queue_position"]["in_team"] == 1

    out = StringIO()
    call_command("jobs", "show", "--user", user.username, str(gang.pk), stdout=out)
    assert "reserved start:" in out.getvalue()
    out = StringIO()
    call_command("jobs", "list", "--start", "--user", user.username, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:3] == ["JOBID", "RANK", "NAME"]
    assert [line.split()[0] for line in lines[1:]] == [str(gang.pk), str(long.pk)]
    assert "reserved" in lines[1] and "estimate" in lines[2]


def test_list_start_shows_only_what_the_user_may_see(gang_world, db):
    stranger = make_user("sid", "scientist", [])
    out = StringIO()
    call_command("jobs", "list", "--start", "--user", stranger.username, stdout=out)
    assert out.getvalue().strip().splitlines()[1:] == []
