"""Charts are data: the figures' traces and values, built from samples and rollups."""

import json
from datetime import timedelta

import pytest

from scheduling.models import JobState
from scheduling.usage import charts, selectors
from scheduling.usage.models import Granularity, UsageRollup, UsageSample
from scheduling.usage.ranges import Window
from tests.usage.conftest import T0, hours

pytestmark = pytest.mark.django_db


def as_data(fig):
    return json.loads(charts.as_json(fig))


def raw_window():
    return Window(start=T0, end=T0 + hours(1), step="raw", preset="24h")


@pytest.fixture
def minutes(team_a, team_b, p5, add_sample):
    for m in range(3):
        add_sample(
            team_a,
            p5,
            T0 + timedelta(minutes=m),
            used_acc=10,
            borrowed_acc=2,
            quota_acc=8,
            fair_share_acc=9,
            pending_acc=m,
        )
        add_sample(team_b, p5, T0 + timedelta(minutes=m), used_acc=2, quota_acc=4, lent_acc=2, fair_share_acc=3)


def test_team_chart_stacks_within_quota_and_borrowed_under_the_quota_line(minutes, team_a, manager_user):
    from quotas.models import InstanceType, Team

    series = selectors.team_series(
        window=raw_window(), teams=Team.objects.filter(pk=team_a.pk), types=InstanceType.objects.all()
    )
    fig = as_data(charts.team_usage_figure(series))
    traces = {t["name"]: t for t in fig["data"]}
    assert list(traces) == ["within quota", "borrowed", "quota", "lent to others", "fair share"]
    assert traces["within quota"]["y"] == [8, 8, 8] and traces["borrowed"]["y"] == [2, 2, 2]
    assert traces["within quota"]["stackgroup"] == traces["borrowed"]["stackgroup"] == "used"
    assert traces["borrowed"]["line"]["color"] != traces["within quota"]["line"]["color"]
    assert "stackgroup" not in traces["quota"] and traces["quota"]["y"] == [8, 8, 8]
    assert traces["within quota"]["x"][0].startswith("2026-03-02T00:00:00")


def test_team_chart_draws_what_the_team_lends(minutes, team_b):
    from quotas.models import InstanceType, Team

    series = selectors.team_series(
        window=raw_window(), teams=Team.objects.filter(pk=team_b.pk), types=InstanceType.objects.all()
    )
    traces = {t["name"]: t for t in as_data(charts.team_usage_figure(series))["data"]}
    assert traces["lent to others"]["y"] == [2, 2, 2] and "stackgroup" not in traces["lent to others"]


def test_teams_stack_keeps_the_top_teams_and_sums_the_rest(minutes):
    from quotas.models import InstanceType, Team

    data = selectors.usage_by_team(
        window=raw_window(), teams=Team.objects.all(), types=InstanceType.objects.all(), top=1
    )
    assert data["series"] == {"team-a": [10, 10, 10], selectors.OTHER: [2, 2, 2]}
    fig = as_data(charts.teams_stack_figure(data, capacity=16))
    assert [t["name"] for t in fig["data"]] == ["team-a", selectors.OTHER, "installed capacity"]
    assert fig["data"][-1]["y"] == [16, 16]


def test_utilization_is_percent_of_installed_capacity(minutes):
    from quotas.models import InstanceType, Team

    data = selectors.utilization_by_type(
        window=raw_window(), teams=Team.objects.all(), types=InstanceType.objects.all()
    )
    assert data["series"] == {"ml.p5.48xlarge": [75.0, 75.0, 75.0]}  # 12 of 2 nodes x 8 GPUs


def test_rollup_windows_read_rollups(team_a, p5):
    from quotas.models import InstanceType, Team

    for h in range(5):
        UsageRollup.objects.create(
            granularity=Granularity.HOUR, bucket=T0 + hours(h), team=team_a, instance_type=p5, used_acc=h, quota_acc=8
        )
    window = Window(start=T0 + hours(1), end=T0 + hours(4), step="hour", preset="7d")
    series = selectors.team_series(window=window, teams=Team.objects.all(), types=InstanceType.objects.all())
    assert series["used"] == [1, 2, 3] and series["quota"] == [8, 8, 8]


def test_pending_and_preemption_charts(minutes, team_a, scientist, p5, add_job):
    from quotas.models import InstanceType, Team

    add_job(
        team_a,
        scientist,
        p5,
        submitted=T0,
        life=[(JobState.ADMITTED, T0 + timedelta(minutes=20)), (JobState.PREEMPTED, T0 + timedelta(minutes=40))],
    )
    teams, types = Team.objects.all(), InstanceType.objects.all()
    window = raw_window()
    waits = selectors.wait_times(window=window, teams=teams, types=types)
    assert waits["avg_minutes"] == [20] and waits["jobs"] == [1]
    series = selectors.team_series(window=window, teams=teams, types=types)
    fig = as_data(charts.pending_figure([("GPUs", series)], waits))
    assert fig["data"][0]["y"] == [0, 1, 2] and fig["data"][1]["y"] == [20] and fig["data"][1]["yaxis"] == "y2"
    pre = selectors.preemptions_by_team(window=window, teams=teams, types=types)
    assert pre["series"] == {"team-a": [1]}
    assert as_data(charts.preemptions_figure(pre))["layout"]["barmode"] == "stack"


def test_a_flat_chart_says_why(team_a):
    from quotas.models import Team

    window = raw_window()
    quiet = selectors.team_series(window=window, teams=Team.objects.filter(pk=team_a.pk), types=None)
    waits = {"x": [T0], "avg_minutes": [0], "jobs": [3]}
    assert as_data(charts.team_usage_figure(quiet))["layout"].get("annotations") is None  # no samples: no note
    quiet = {**quiet, "x": [T0], **{m: [0] for m in selectors.MEASURES}}
    notes = as_data(charts.team_usage_figure(quiet, unit_label="Neuron devices"))["layout"]["annotations"]
    assert notes[0]["text"] == "None in use in this range"
    notes = as_data(charts.pending_figure([("GPUs", quiet)], waits))["layout"]["annotations"]
    assert notes[0]["text"] == "Nothing waited in this range: 3 jobs started as submitted"


def test_the_series_api_sums_one_accelerator_resource(minutes, team_a, manager_user, api_for):
    from quotas.models import InstanceType

    trn1 = InstanceType.objects.create(
        name="ml.trn1.32xlarge", accelerator_resource="neuron", accelerators=16, vcpus=128, memory_gib=512
    )
    for m in range(3):
        UsageSample.objects.create(team=team_a, instance_type=trn1, at=T0 + timedelta(minutes=m), used_acc=16)
    api = api_for(manager_user)
    window = {"range": "custom", "start": "2026-03-02", "end": "2026-03-02"}
    gpus = api.get("/api/usage/series/", window).json()
    assert gpus["accelerator"] == "gpu" and gpus["used"] == [12, 12, 12]  # team-a's 10 and team-b's 2, no Neuron
    neuron = api.get("/api/usage/series/", {**window, "accelerator": "neuron"}).json()
    assert neuron["used"] == [16, 16, 16]
    assert api.get("/api/usage/series/", {**window, "accelerator": "tpu"}).status_code == 400
    cpu = api.get("/api/usage/series/", {**window, "resource": "cpu"}).json()
    assert cpu["accelerator"] == ""
