"""The plan the scheduler publishes for the pages: a page that reads it shows what engine.decide() says of the
same state, and a publication that is no longer current (configuration changed, job events it does not reflect,
not confirmed for too long) is not used: the page asks the engine afresh."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from quotas.models import Team
from scheduling import engine, published, selectors
from scheduling.models import JobEvent, JobState, PublishedPlan
from scheduling.snapshot import build_snapshot
from scheduling.status import page_team_statuses
from scheduling.warm import WarmScheduler
from tests.scheduling.test_one_plan import gang_world  # noqa: F401 (fixture)


def scheduler_pass() -> PublishedPlan:
    WarmScheduler(carry_out=lambda: None).run_pass(trigger="test")
    return PublishedPlan.objects.order_by("-pk").first()


def test_pages_reading_the_published_plan_show_what_decide_says(gang_world, client, settings, monkeypatch):  # noqa: F811
    settings.SIMULATED_TIME_SCALE = 1.0
    gang, long, user, team = gang_world["gang"], gang_world["long"], gang_world["user"], gang_world["team"]
    selectors.job_plan(long)  # a page asks for a waiting job's estimate once: the scheduler carries it from now on
    row = scheduler_pass()
    assert row.source == "warm" and f"j{long.pk}" in row.estimates
    decided = engine.decide(build_snapshot(), estimate=(str(long.pk),))
    assert decided.admissions == [] and decided.preemptions == []  # the state is settled: the same state

    def refuse(**_):
        raise AssertionError("the page planned the cluster itself instead of reading the published plan")

    monkeypatch.setattr(published, "page_standing", refuse)
    for job in (gang, long):
        expected, shown = decided.plans[str(job.pk)], selectors.job_plan(job)
        assert (shown.place.in_cluster, shown.place.in_team) == (expected.rank, expected.team_rank)
        assert shown.place.cluster_queued == len(decided.plans) == 2
        assert shown.place.team_queued == decided.teams[team.name].pending == 2
        start = expected.planned_start if expected.head else expected.estimated_start
        assert abs(shown.estimate.at.timestamp() - start) < 1e-3
    head = selectors.job_plan(gang).estimate
    assert head.kind == "reserved" and head.waits_for == [int(n) for n in decided.plans[str(gang.pk)].waits_for]
    assert selectors.job_plan(long).estimate.kind == "estimate"

    standing = page_team_statuses()[team.name]
    status = decided.teams[team.name]
    for field in published.TEAM_FIELDS:
        assert getattr(standing, field) == getattr(status, field), field

    client.force_login(user)
    body = client.get(reverse("jobs:job-detail", args=[gang.pk])).content.decode()
    assert 'data-kind="reserved"' in body
    api = client.get(f"/api/teams/{team.pk}/status/").json()
    assert api["usage"] == status.usage and api["fair_share"] == status.fair_share and api["pending"] == 2


def test_a_cold_loop_run_publishes_too(gang_world, settings):  # noqa: F811
    from scheduling.loop import admission_run

    settings.SIMULATED_TIME_SCALE = 1.0
    admission_run(trigger="test")
    row = PublishedPlan.objects.order_by("-pk").first()
    assert row.source == "loop" and published.latest() is not None
    decided = engine.decide(build_snapshot())
    found = published.job_in_plan(gang_world["gang"])
    assert found.plan.planned_start == pytest.approx(decided.plans[str(gang_world["gang"].pk)].planned_start)
    assert published.team_statuses()[gang_world["team"].name]["usage"] == decided.teams["llm"].usage


def test_a_stale_publication_is_not_used(gang_world, settings):  # noqa: F811
    settings.SIMULATED_TIME_SCALE = 1.0
    gang = gang_world["gang"]
    row = scheduler_pass()
    assert published.latest() is not None and published.job_in_plan(gang) is not None

    # a job event the publication does not reflect: used while young (the scheduler is about to pass), not after
    event = JobEvent.objects.create(job=gang, to_state=JobState.PENDING, reason="test")
    assert published.latest() is not None
    JobEvent.objects.filter(pk=event.pk).update(at=timezone.now() - timedelta(seconds=published.LAG_SECONDS + 1))
    assert published.latest() is None
    row = scheduler_pass()  # the scheduler followed it: current again
    assert row.event_top >= event.pk and published.latest() is not None

    # not confirmed for too long (no scheduler passing)
    PublishedPlan.objects.filter(pk=row.pk).update(
        confirmed_at=timezone.now() - timedelta(seconds=published.FRESH_SECONDS + 1)
    )
    assert published.latest() is None
    row = scheduler_pass()
    assert published.latest() is not None

    # the configuration changed since
    Team.objects.create(name="newcomers", namespace="hyperpod-ns-newcomers")
    assert published.latest() is None
    assert published.job_in_plan(gang) is None and published.team_statuses() is None
    assert "newcomers" in page_team_statuses()  # the page asked the engine afresh, and published that
    assert published.latest().source == "page"


def test_a_job_newer_than_the_publication_is_planned_afresh(gang_world, settings, submit):  # noqa: F811
    settings.SIMULATED_TIME_SCALE = 1.0
    scheduler_pass()
    late = submit(gang_world["user"], gang_world["team"], name="late", accelerators=8, pods=2)
    assert published.job_in_plan(late) is None  # not in it: the page plans it
    plan = selectors.job_plan(late)
    assert plan.place.team_queued == 3 and plan.place.in_team == 3
    assert published.job_in_plan(late) is not None  # and published what it found


def test_infinities_survive_the_json_column(db):
    inf = float("inf")
    status = engine.TeamStatus(
        quota={}, borrowing_limit=None, usage={}, borrowed={}, lent={}, fair_share={"t": {"gpu": inf}}, pending=0
    )
    decisions = engine.Decisions(admissions=[], preemptions=[], reasons={}, teams={"a": status})
    published.publish(decisions, engine_now=0.0, event_top=0, config=published.current_config(), source="warm")
    assert published.team_statuses()["a"]["fair_share"] == {"t": {"gpu": inf}}
    assert published.team_statuses(["a"])["a"]["fair_share"] == {"t": {"gpu": inf}}


def test_a_publication_waits_while_a_jobs_end_is_due_but_not_for_long(monkeypatch):
    """Publishing costs the scheduler time between passes: while the end of a job is due (its room waits to be
    given out) it waits, up to YIELD_TO_ENDS_SECONDS after the last publication."""
    import time

    from scheduling import loop, published

    pace = published.Pace()
    pace.at = time.monotonic() - published.PUBLISH_MIN_SECONDS - 0.5
    monkeypatch.setattr(loop, "wake_up_due", lambda: False)
    assert pace.due()
    monkeypatch.setattr(loop, "wake_up_due", lambda: True)
    assert not pace.due()
    pace.at = time.monotonic() - published.YIELD_TO_ENDS_SECONDS - 0.5
    assert pace.due()
