"""Right-sizing advice from four weeks of hourly usage: quota mostly unused, quota always exhausted with work
waiting and no room to borrow, capacity nobody has quota for; each proposal replays in one click."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from quotas.models import NodeGroup
from scheduling.usage.models import Granularity, UsageRollup
from scheduling.whatif.advice import advise
from scheduling.whatif.models import Advice, AdviceKind, Replay
from scheduling.whatif.tasks import right_sizing_task

NOW = timezone.now().replace(minute=0, second=0, microsecond=0)


def _hours(team, it, **measures):
    return [
        UsageRollup(
            granularity=Granularity.HOUR,
            bucket=NOW - timedelta(hours=h),
            team=team,
            instance_type=it,
            samples=60,
            seconds=3600,
            **{k: (v(h) if callable(v) else v) for k, v in measures.items()},
        )
        for h in range(1, 28 * 24 + 1)
    ]


@pytest.fixture
def usage(team_a, team_b, p5):
    team_b.sharing = "Lend"  # may not borrow: "at its limit" whenever it is out of quota
    team_b.save()
    NodeGroup.objects.filter(instance_type=p5).update(node_count=3)  # 24 GPUs, 12 under quota
    rows = _hours(team_a, p5, quota_acc=8, used_acc=1.5, max_used_acc=lambda h: 3 if h % 24 == 0 else 2)
    rows += _hours(
        team_b, p5, quota_acc=4, used_acc=4, max_used_acc=4, pending_acc=lambda h: 6 if h % 5 else 0, max_pending_acc=8
    )
    UsageRollup.objects.bulk_create(rows)


def test_the_three_kinds_of_proposal_with_their_evidence(usage, team_a, team_b, p5):
    proposals = {a.kind: a for a in advise(now=NOW)}
    assert set(proposals) == {AdviceKind.UNDERUSED, AdviceKind.STARVED, AdviceKind.UNALLOCATED}

    under = proposals[AdviceKind.UNDERUSED]
    assert under.team == team_a and "quota 8 → 3 GPUs" in under.summary
    assert (
        under.evidence[0] == "week 1: 95th percentile of hourly peak use 2.0 of 8 (25 %)"
    )  # a daily peak of 3 is under 5 % of hours
    team = next(t for t in under.draft["teams"] if t["name"] == "team-a")
    assert team["allocations"][p5.name] == {"accelerators": 3}

    starved = proposals[AdviceKind.STARVED]
    assert starved.team == team_b and "quota 4 → 10 GPUs" in starved.summary
    assert starved.evidence[0].startswith("80 % of 672 hours: all 4 of its quota in use, work waiting")

    idle = proposals[AdviceKind.UNALLOCATED]
    assert idle.team is None and "1 node nobody has quota for and nobody borrowed: remove it" in idle.summary
    assert idle.draft["node_groups"][0]["node_count"] == 2


def test_a_rerun_replaces_its_own_proposals_and_the_task_runs(usage):
    advise(now=NOW)
    advise(now=NOW)
    assert Advice.objects.count() == 3
    assert right_sizing_task()["proposals"] >= 0


def test_quiet_usage_proposes_nothing(team_a, p5):
    UsageRollup.objects.bulk_create(_hours(team_a, p5, quota_acc=8, used_acc=6, max_used_acc=7))
    NodeGroup.objects.filter(instance_type=p5).update(node_count=1)
    assert advise(now=NOW) == []


@pytest.mark.parametrize("role", ["anonymous", "scientist", "manager", "admin"])
def test_page_and_one_click_replay(client_for, users, usage, role):
    advise(now=NOW)
    user = None if role == "anonymous" else users[role]
    page = client_for(user).get(reverse("whatif:advice"))
    assert page.status_code == {"anonymous": 302, "scientist": 403}.get(role, 200)
    advice = Advice.objects.get(kind=AdviceKind.UNDERUSED)
    response = client_for(user).post(reverse("whatif:advice-replay", args=[advice.pk]))
    assert response.status_code == {"anonymous": 302, "scientist": 403, "manager": 403}.get(role, 302)
    if role == "admin":
        replay = Replay.objects.get()
        assert response["Location"] == replay.get_absolute_url() and replay.draft == advice.draft
        assert "Replay #" in client_for(user).get(reverse("whatif:advice")).content.decode()
    else:
        assert Replay.objects.count() == 0


def test_simulated_history_gives_usage_that_the_advice_reads(db):
    from django.db.models import Sum

    from quotas.demo import demo_load
    from scheduling.models import Job
    from scheduling.usage.models import UsageSample
    from scheduling.whatif.synthetic import record_simulated_history

    demo_load()
    record_simulated_history(days=4, stride=10, closed=True, usage=True)
    assert not Job.objects.filter(state__in=["running", "pending"]).exists()  # nothing left for a live cluster
    hourly = UsageRollup.objects.filter(granularity=Granularity.HOUR)
    assert hourly.exists() and UsageSample.objects.count() > hourly.count()
    # the rollups' accelerator-hours are the runs' (sampled every 10 minutes: within a few per cent)
    rolled = hourly.aggregate(h=Sum("acc_hours"))["h"]
    ran = sum(
        j.accelerators * j.pods * (j.finished_at - j.started_at).total_seconds() / 3600
        for j in Job.objects.filter(state__in=["succeeded", "cancelled"], started_at__isnull=False, preemption_count=0)
    )
    assert ran * 0.95 <= rolled
    assert isinstance(advise(), list)


def test_demo_history_command_refuses_twice(db):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no teams"):
        call_command("demo_history", "--days", "30")
    with pytest.raises(CommandError, match="--days from 3 to 90"):
        call_command("demo_history", "--days", "1")
