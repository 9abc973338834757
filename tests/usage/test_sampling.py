"""Sampling what each team has, rolling samples up into hours and days, and pruning old samples."""

from datetime import timedelta

import pytest

from scheduling.models import Job, JobState
from scheduling.status import TeamStanding
from scheduling.usage import services
from scheduling.usage.models import Granularity, UsageRollup, UsageSample
from tests.usage.conftest import T0

pytestmark = pytest.mark.django_db


def running_job(team, user, it, gpus, *, borrowed=False):
    return Job.objects.create(
        team=team,
        submitted_by=user,
        name="run",
        instance_type=it,
        assigned_instance_type=it,
        accelerators=gpus,
        vcpus=10,
        memory_gib=100,
        image="img",
        state=JobState.RUNNING,
        admitted_at=T0 - timedelta(hours=1),
        started_at=T0 - timedelta(hours=1),
        submitted_at=T0 - timedelta(hours=2),
        placement=[0],
        borrowed=borrowed,
    )


def test_sample_records_usage_borrowed_lent_pending_quota_and_fair_share(team_a, team_b, scientist, p5):
    running_job(team_a, scientist, p5, 8)
    running_job(team_a, scientist, p5, 4, borrowed=True)  # team-a's quota is 8 GPUs: 4 are borrowed from team-b
    Job.objects.create(
        team=team_b,
        submitted_by=scientist,
        name="wait",
        instance_type=None,
        accelerators=2,
        pods=2,
        vcpus=1,
        image="img",
        submitted_at=T0,
    )
    assert services.usage_sample_record(now=T0) == 2
    a = UsageSample.objects.get(team=team_a)
    b = UsageSample.objects.get(team=team_b)
    assert (a.used_acc, a.borrowed_acc, a.quota_acc, a.used_cpu, a.used_mem) == (12, 4, 8, 20, 200)
    assert (b.lent_acc, b.quota_acc, b.used_acc) == (4, 4, 0)
    # A job naming no instance type counts where its team has quota: 2 pods x 2 GPUs, one job.
    assert (b.pending_acc, b.pending_cpu, b.pending_jobs) == (4, 2, 1)
    assert a.fair_share_acc > 0 and b.fair_share_acc > 0
    assert a.at == T0 and a.seconds == 60


def test_sample_covers_the_time_since_the_last_one_but_not_a_long_outage(team_a, p5):
    standings = {"team-a": TeamStanding(quota={p5.name: {"gpu": 8}})}
    services.usage_sample_record(now=T0, standings=standings)
    services.usage_sample_record(now=T0 + timedelta(seconds=90), standings=standings)
    services.usage_sample_record(now=T0 + timedelta(hours=2), standings=standings)
    assert list(UsageSample.objects.values_list("seconds", flat=True)) == [60, 90, 60]


def test_resampling_the_same_tick_replaces_it(team_a, p5):
    services.usage_sample_record(now=T0, standings={"team-a": TeamStanding(usage={p5.name: {"gpu": 2}})})
    services.usage_sample_record(now=T0, standings={"team-a": TeamStanding(usage={p5.name: {"gpu": 3}})})
    assert list(UsageSample.objects.values_list("used_acc", flat=True)) == [3]


def test_teams_with_nothing_on_a_type_write_no_rows(team_a, p5):
    assert services.usage_sample_record(now=T0, standings={"team-a": TeamStanding(quota={p5.name: {"gpu": 0}})}) == 0


def test_hourly_rollup_averages_peaks_and_accelerator_hours(team_a, p5, add_sample):
    # 30 minutes at 8 GPUs (2 borrowed) then 30 minutes at 0, quota 6: avg 4, peak 8, 4 GPU-hours, 1 borrowed.
    for minute in range(60):
        used = 8 if minute < 30 else 0
        add_sample(
            team_a,
            p5,
            T0 + timedelta(minutes=minute),
            used_acc=used,
            borrowed_acc=2 if used else 0,
            quota_acc=6,
            used_cpu=used * 10,
            quota_cpu=100,
        )
    assert services.usage_rollup(granularity=Granularity.HOUR, start=T0, end=T0 + timedelta(hours=1)) == 1
    hour = UsageRollup.objects.get(granularity="hour")
    assert hour.bucket == T0 and hour.samples == 60 and hour.seconds == 3600
    assert (hour.used_acc, hour.max_used_acc, hour.quota_acc) == (4, 8, 6)
    assert (hour.acc_hours, hour.borrowed_acc_hours, hour.quota_acc_hours) == (4, 1, 6)
    # idle quota: 30 min with 0 of 6 idle (6 used within quota) + 30 min with 6 idle = 3 hours.
    assert hour.idle_quota_acc_hours == 3
    assert hour.cpu_hours == 40


def test_rollups_are_idempotent_upserts_and_days_add_up_hours(team_a, p5, add_sample):
    for h in range(3):
        add_sample(team_a, p5, T0 + timedelta(hours=h), used_acc=h + 1, quota_acc=4, seconds=3600)
    for _ in range(2):
        services.usage_rollup(granularity=Granularity.HOUR, start=T0, end=T0 + timedelta(days=1))
        services.usage_rollup(granularity=Granularity.DAY, start=T0, end=T0 + timedelta(days=1))
    assert UsageRollup.objects.filter(granularity="hour").count() == 3
    day = UsageRollup.objects.get(granularity="day")
    assert (day.acc_hours, day.quota_acc_hours, day.used_acc, day.max_used_acc) == (6, 12, 2, 3)
    # A late sample changes the same rows instead of adding new ones.
    UsageSample.objects.filter(at=T0).update(used_acc=4)
    services.usage_rollup(granularity=Granularity.HOUR, start=T0, end=T0 + timedelta(days=1))
    services.usage_rollup(granularity=Granularity.DAY, start=T0, end=T0 + timedelta(days=1))
    assert UsageRollup.objects.count() == 4
    assert UsageRollup.objects.get(granularity="day").acc_hours == 9


def test_recent_rollup_covers_the_current_and_previous_hour(team_a, p5, add_sample):
    add_sample(team_a, p5, T0 + timedelta(minutes=50), used_acc=2)
    add_sample(team_a, p5, T0 + timedelta(minutes=70), used_acc=2)
    assert services.usage_rollup_recent(now=T0 + timedelta(minutes=75)) == (2, 1)


def test_prune_deletes_only_samples_older_than_the_retention(team_a, p5, add_sample, settings):
    settings.USAGE_RAW_RETENTION_DAYS = 14
    add_sample(team_a, p5, T0 - timedelta(days=15), used_acc=1)
    keep = add_sample(team_a, p5, T0 - timedelta(days=13), used_acc=1)
    assert services.usage_prune(now=T0) == 1
    assert list(UsageSample.objects.all()) == [keep]
    with pytest.raises(ValueError, match="at least 1"):
        services.usage_prune(now=T0, retention_days=0)


def test_beat_tasks_run_through_celery(team_a, p5):
    from scheduling.usage import tasks

    assert tasks.usage_sample.delay().get() >= 1
    assert tasks.usage_rollup.delay().get() == (1, 1)
    assert tasks.usage_prune.delay().get() == 0
    assert tasks.alerts_evaluate.delay().get() == {"fired": 0, "resolved": 0, "checked": 0}


def test_rollup_command_rebuilds_whole_days_and_refuses_bad_dates(team_a, p5, add_sample):
    from io import StringIO

    from django.core.management import CommandError, call_command

    for h in range(30):
        add_sample(team_a, p5, T0 + timedelta(hours=h), used_acc=2, seconds=3600)
    out = StringIO()
    call_command("usage_rollup", "--since", "2026-03-02", "--until", "2026-03-03", stdout=out)
    assert "rolled up 30 hourly and 2 daily buckets" in out.getvalue()
    assert UsageRollup.objects.get(granularity="day", bucket=T0).acc_hours == 48
    with pytest.raises(CommandError, match="not a date"):
        call_command("usage_rollup", "--since", "March")
    with pytest.raises(CommandError, match="must not be after"):
        call_command("usage_rollup", "--since", "2026-03-05", "--until", "2026-03-01")
