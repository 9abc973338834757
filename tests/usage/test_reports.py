"""The manager reports: daily summary per team and instance type, the per-job report, CSV and API alike."""

import csv
import io
from datetime import date, timedelta

import pytest

from scheduling.models import JobState
from scheduling.usage import selectors
from scheduling.usage.ranges import window_for
from tests.usage.conftest import T0, hours

pytestmark = pytest.mark.django_db

MARCH = {"range": "custom", "start": "2026-03-01", "end": "2026-03-07"}


@pytest.fixture
def history(team_a, team_b, p5, scientist, other_scientist, add_day, add_job):
    """team-a used 200 GPU-hours on 2 March, 170 from its quota and 30 borrowed; team-b 10 on 3 March."""
    add_day(team_a, p5, T0, acc_hours=200, borrowed=30, quota_hours=192, cpu_hours=2400)
    add_day(team_b, p5, T0 + timedelta(days=1), acc_hours=10, quota_hours=96)
    add_job(
        team_a,
        scientist,
        p5,
        submitted=T0 + hours(1),
        name="train",
        accelerators=4,
        pods=2,
        life=[
            (JobState.ADMITTED, T0 + hours(1.5)),
            (JobState.RUNNING, T0 + hours(1.6)),
            (JobState.PREEMPTED, T0 + hours(3.6), "preempted to reclaim quota lent to team-a"),
            (JobState.ADMITTED, T0 + hours(4.5)),
            (JobState.RUNNING, T0 + hours(4.6)),
            (JobState.SUCCEEDED, T0 + hours(5.6)),
        ],
    )
    add_job(
        team_a,
        scientist,
        p5,
        submitted=T0 + hours(2),
        name="eval",
        accelerators=1,
        life=[
            (JobState.ADMITTED, T0 + hours(2.5)),
            (JobState.RUNNING, T0 + hours(2.5)),
            (JobState.SUCCEEDED, T0 + hours(3.5)),
        ],
    )
    add_job(team_b, other_scientist, p5, submitted=T0 + timedelta(days=1), name="bjob")


def form_for(user, data):
    from scheduling.usage.forms import UsageFilterForm

    form = UsageFilterForm(data, user=user)
    assert form.is_valid(), form.errors
    return form


def test_summary_splits_quota_and_borrowed_hours_and_counts_jobs_waits_preemptions(history, manager_user):
    form = form_for(manager_user, MARCH)
    rows = selectors.usage_summary(window=form.cleaned_data["window"], teams=form.teams(), types=form.instance_types())
    a = next(r for r in rows if r["team"] == "team-a")
    assert a["day"] == date(2026, 3, 2) and a["instance_type"] == "ml.p5.48xlarge"
    assert (a["accelerator_hours"], a["within_quota_accelerator_hours"], a["borrowed_accelerator_hours"]) == (
        200,
        170,
        30,
    )
    assert a["quota_utilization_pct"] == round(100 * 170 / 192, 1)
    assert a["idle_quota_accelerator_hours"] == 22 and a["vcpu_hours"] == 2400
    # Both jobs were last admitted on 2 March: waits of 3.5 h (the preempted job's re-admission) and 0.5 h.
    assert a["jobs_started"] == 2 and a["avg_wait_minutes"] == 120 and a["preemptions"] == 1
    assert [r["team"] for r in rows] == ["team-a", "team-b"]
    totals = selectors.team_totals(rows)
    assert (totals[0]["team"], totals[0]["used"], totals[0]["within"], totals[0]["borrowed"]) == (
        "team-a",
        200,
        170,
        30,
    )


def test_period_summary_adds_the_days_up(history, manager_user, team_a, p5, add_day):
    add_day(team_a, p5, T0 + timedelta(days=2), acc_hours=20, quota_hours=192)
    form = form_for(manager_user, MARCH)
    rows = selectors.usage_summary(
        window=form.cleaned_data["window"], teams=form.teams(), types=form.instance_types(), by_day=False
    )
    a = next(r for r in rows if r["team"] == "team-a")
    assert a["day"] is None and a["accelerator_hours"] == 220 and a["quota_accelerator_hours"] == 384


def test_job_report_counts_every_run_of_a_preempted_job(history, manager_user):
    form = form_for(manager_user, MARCH)
    jobs = selectors.job_report_queryset(
        window=form.cleaned_data["window"], teams=form.teams(), types=form.instance_types()
    )
    rows = {r["name"]: r for r in selectors.job_report_rows(jobs)}
    train = rows["train"]
    # Two runs of 2 h and 1 h, 8 GPUs: 24 GPU-hours.
    assert (train["run_minutes"], train["accelerator_hours"], train["accelerators"]) == (180, 24, 8)
    assert (train["times_preempted"], train["user"], train["team"]) == (1, "sam", "team-a")
    assert rows["eval"]["wait_minutes"] == 30 and rows["eval"]["accelerator_hours"] == 1
    assert rows["bjob"]["started"] is None and rows["bjob"]["accelerator_hours"] == 0


def test_scientists_see_only_their_teams_in_reports(history, scientist):
    form = form_for(scientist, MARCH)
    rows = selectors.usage_summary(window=form.cleaned_data["window"], teams=form.teams(), types=form.instance_types())
    assert {r["team"] for r in rows} == {"team-a"}


def test_summary_csv_matches_the_api(history, manager_user, client_for, api_for):
    response = client_for(manager_user).get("/reports/summary.csv", MARCH)
    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    assert 'filename="usage-summary-20260301-20260307.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0]["team"] == "team-a" and float(rows[0]["borrowed_accelerator_hours"]) == 30
    api = api_for(manager_user).get("/api/usage/summary/", MARCH).json()
    assert api["count"] == 2 and api["results"][0]["accelerator_hours"] == float(rows[0]["accelerator_hours"])
    assert api["results"][0]["accelerator"] == rows[0]["accelerator"] == "gpu"
    api_csv = api_for(manager_user).get("/api/usage/summary/", {**MARCH, "format": "csv"})
    assert list(csv.DictReader(io.StringIO(api_csv.content.decode())))[0]["team"] == "team-a"


def test_jobs_csv_and_api(history, manager_user, client_for, api_for):
    response = client_for(manager_user).get("/reports/jobs.csv", MARCH)
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert {r["name"] for r in rows} == {"train", "eval", "bjob"}
    assert next(r for r in rows if r["name"] == "train")["accelerator_hours"] == "24.0"
    api = api_for(manager_user).get("/api/usage/jobs/", {**MARCH, "team": "team-b"}).json()
    assert [r["name"] for r in api["results"]] == ["bjob"]


@pytest.mark.parametrize(
    "params, message",
    [
        ({"range": "custom", "start": "2026-03-05"}, "needs both a start and an end"),
        ({"range": "custom", "start": "2026-03-05", "end": "2026-03-01"}, "must not be after"),
        ({"range": "custom", "start": "2020-01-01", "end": "2026-03-01"}, "at most 400 days"),
        ({"range": "1y"}, "Select a valid choice"),
        ({"team": "no-such-team"}, "Select a valid choice"),
    ],
)
def test_bad_filters_are_a_400_with_a_reason(manager_user, client_for, api_for, params, message):
    api = api_for(manager_user).get("/api/usage/summary/", params)
    assert api.status_code == 400 and message in str(api.json())
    csv_response = client_for(manager_user).get("/reports/summary.csv", params)
    assert csv_response.status_code == 400 and message in csv_response.content.decode()
    page = client_for(manager_user).get("/reports/", params)
    assert page.status_code == 200 and message in page.content.decode()


def test_scientist_filtering_another_team_is_refused(history, scientist, api_for):
    response = api_for(scientist).get("/api/usage/summary/", {**MARCH, "team": "team-b"})
    assert response.status_code == 400


@pytest.mark.parametrize("preset, step", [("24h", "raw"), ("7d", "hour"), ("30d", "hour"), ("90d", "day")])
def test_each_range_reads_the_right_resolution(preset, step):
    window = window_for(preset, now=T0)
    assert window.step == step and window.end == T0


def test_custom_ranges_pick_the_step_by_length():
    assert window_for("custom", start=date(2026, 3, 1), end=date(2026, 3, 2)).step == "raw"
    assert window_for("custom", start=date(2026, 3, 1), end=date(2026, 3, 31)).step == "hour"
    assert window_for("custom", start=date(2026, 1, 1), end=date(2026, 3, 31)).step == "day"


def test_the_summary_tables_sort_and_page_and_keep_the_filters(history, manager_user, client_for):
    c = client_for(manager_user)
    query = "range=custom&start=2026-03-01&end=2026-03-07"
    response = c.get(f"/reports/?{query}&summary-sort=-accelerator_hours&teams-sort=team")
    summary, teams = response.context["summary_table"], response.context["team_table"]
    assert [r.record["team"] for r in summary.page.object_list] == ["team-a", "team-b"]
    assert [r.record["team"] for r in teams.page.object_list] == ["team-a", "team-b"]
    response = c.get(f"/reports/?{query}&summary-sort=accelerator_hours&teams-sort=-team&per_page=25")
    assert [r.record["team"] for r in response.context["summary_table"].page.object_list] == ["team-b", "team-a"]
    assert [r.record["team"] for r in response.context["team_table"].page.object_list] == ["team-b", "team-a"]
    html = response.content.decode()
    assert 'name="summary-sort" value="accelerator_hours"' in html  # a filter change keeps the order
    assert 'name="per_page" value="25"' in html
    assert "summary-sort=-accelerator_hours" in html  # the header links the other direction
    for bad in ("summary-sort=nonsense", "summary-page=abc", "per_page=7", "teams-page=99"):
        assert c.get(f"/reports/?{query}&{bad}").status_code == 200, bad


def test_a_worker_imports_every_view_before_its_first_request():
    """The CSV exports' first byte: a worker's first request used to import every URLconf and view (0.7-2 s)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = "import sys, portal.wsgi; print(all(m in sys.modules for m in sys.argv[1:]))"
    views = ["scheduling.views", "scheduling.usage.views", "scheduling.kube.views", "drf_spectacular.views"]
    out = subprocess.run(
        [sys.executable, "-c", code, *views],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "DEBUG": "true", "DJANGO_SETTINGS_MODULE": "portal.settings"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "True"


def test_the_per_job_report_sorts_by_wait_and_instance_type(history, manager_user, client_for, p5):
    from quotas.models import InstanceType

    g5 = InstanceType.objects.create(name="ml.g5.2xlarge", accelerator_resource="gpu", accelerators=1, vcpus=8,
                                     memory_gib=32)  # fmt: skip
    from scheduling.models import Job

    Job.objects.filter(name="bjob").update(instance_type=g5)
    c = client_for(manager_user)

    def names(sort):
        response = c.get("/reports/jobs/", {**MARCH, "sort": sort})
        return [row.record.name for row in response.context["table"].page.object_list]

    # waits: train 3.5 h (its last admission), eval 0.5 h, bjob never admitted (last both ways)
    assert names("wait") == ["eval", "train", "bjob"] and names("-wait") == ["train", "eval", "bjob"]
    assert names("instance_type")[0] == "bjob" and names("-instance_type")[-1] == "bjob"


def test_a_preset_counts_today_in_the_first_minutes_after_midnight():
    from datetime import UTC, datetime

    from scheduling.usage.ranges import page_window

    window = page_window("7d", now=datetime(2026, 3, 9, 0, 3, tzinfo=UTC))  # ends at the 00:00 rollup mark
    assert window.end == datetime(2026, 3, 9, 0, 0, tzinfo=UTC) and window.last_day == date(2026, 3, 9)
    assert window_for("custom", start=date(2026, 3, 2), end=date(2026, 3, 8)).last_day == date(2026, 3, 8)
