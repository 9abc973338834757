"""Top jobs: the jobs that used the most accelerator-hours in a range, recomputed from the events, per role."""

import csv
import io

import pytest

from scheduling.models import JobEvent, JobState
from tests.numbers import figures, number
from tests.usage.conftest import T0, hours

pytestmark = pytest.mark.django_db

DAY = "range=custom&start=2026-03-02&end=2026-03-02"  # T0's day, a whole UTC day
RUNNING, DONE = JobState.RUNNING, JobState.SUCCEEDED


@pytest.fixture
def jobs(team_a, team_b, p5, scientist, other_scientist, add_job):
    def ran(team, user, name, runs, *, submitted, accelerators=1, pods=1):
        """runs: [(from, to, how it ended)], admitted at the first start."""
        life = [(JobState.ADMITTED, runs[0][0])]
        for start, end, ended in runs:
            life += [(RUNNING, start), (ended, end)]
        return add_job(team, user, p5, submitted=submitted, life=life, name=name, accelerators=accelerators, pods=pods)

    return {
        "a-gang": ran(team_a, scientist, "a-gang", [(T0 + hours(1), T0 + hours(4), DONE)],
                      submitted=T0 + hours(0.5), accelerators=2, pods=2),  # 3 h x 4 = 12
        "a-early": ran(team_a, scientist, "a-early", [(T0 - hours(2), T0 + hours(1), DONE)],
                       submitted=T0 - hours(3), accelerators=8),  # 1 h inside the day x 8 = 8
        "a-preempted": ran(team_a, scientist, "a-preempted", [(T0 + hours(2), T0 + hours(3), JobState.PREEMPTED),
                                                              (T0 + hours(5), T0 + hours(6), DONE)],
                           submitted=T0 + hours(2)),  # two runs of 1 h = 2
        "b-mid": ran(team_b, other_scientist, "b-mid", [(T0 + hours(10), T0 + hours(12), DONE)],
                     submitted=T0 + hours(9.5), accelerators=4),  # 8, a tie with a-early: the newer job first
        "b-tomorrow": ran(team_b, other_scientist, "b-tomorrow", [(T0 + hours(30), T0 + hours(31), DONE)],
                          submitted=T0 + hours(29), accelerators=8),  # outside the day
        "a-waiting": add_job(team_a, scientist, p5, submitted=T0 + hours(3), name="a-waiting", accelerators=8),
    }  # fmt: skip


def hours_from_events(job, start, end) -> float:
    """Accelerator-hours inside [start, end), from the job's events alone: each running event to the next event."""
    events = list(JobEvent.objects.filter(job=job).order_by("at", "id"))
    seconds = 0.0
    for event, following in zip(events, [*events[1:], None], strict=True):
        if event.to_state == JobState.RUNNING:
            until = following.at if following else job.finished_at
            seconds += max((min(until, end) - max(event.at, start)).total_seconds(), 0)
    return seconds / 3600 * job.accelerators * job.pods


def test_top_jobs_rank_the_hours_used_inside_the_range(jobs, manager_user, client_for):
    response = client_for(manager_user).get(f"/reports/top-jobs/?{DAY}")
    assert response.status_code == 200
    shown = figures(response.content)
    table = response.context["table"]
    ranked = [row.record["name"] for row in table.page.object_list]
    assert ranked == ["a-gang", "b-mid", "a-early", "a-preempted"]  # b-tomorrow and a-waiting used nothing that day
    assert number(shown["top jobs:count"]) == 4
    for name in ranked:
        job = jobs[name]
        assert number(shown[f"top:{job.pk}:hours"]) == pytest.approx(hours_from_events(job, T0, T0 + hours(24)))
    assert [number(shown[f"top:{jobs[n].pk}:hours"]) for n in ranked] == [12, 8, 8, 2]
    row = next(r.record for r in table.page.object_list if r.record["name"] == "a-early")
    assert row["wait_minutes"] == 60 and row["accelerators"] == 8 and row["team"] == "team-a"


def test_top_jobs_sort_by_any_column_and_page(jobs, manager_user, client_for):
    c = client_for(manager_user)
    by_wait = c.get(f"/reports/top-jobs/?{DAY}&sort=-wait_minutes").context["table"]
    assert [r.record["name"] for r in by_wait.page.object_list][0] == "a-early"
    by_team = c.get(f"/reports/top-jobs/?{DAY}&sort=team").context["table"]
    assert [r.record["team"] for r in by_team.page.object_list] == ["team-a"] * 3 + ["team-b"]
    paged = c.get(f"/reports/top-jobs/?{DAY}&per_page=25&page=9").context["table"]
    assert paged.page.number == 1  # a page past the end shows the last page
    for bad in ("sort=nonsense", "per_page=-3", "page=abc", "range=custom&start=2026-13-01&end=x"):
        assert c.get(f"/reports/top-jobs/?{bad}").status_code == 200, bad  # ignored, or a form error
    assert c.get("/reports/top-jobs.csv?range=custom&start=2026-03-09&end=2026-03-02").status_code == 400


def test_top_jobs_csv_streams_the_same_ranking(jobs, manager_user, client_for):
    response = client_for(manager_user).get(f"/reports/top-jobs.csv?{DAY}")
    assert response.status_code == 200 and response.streaming
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["rank"], r["name"], float(r["accelerator_hours"])) for r in rows] == [
        ("1", "a-gang", 12.0),
        ("2", "b-mid", 8.0),
        ("3", "a-early", 8.0),
        ("4", "a-preempted", 2.0),
    ]
    assert rows[0]["user"] == "sam" and rows[0]["instance_type"] == "ml.p5.48xlarge" and rows[0]["accelerators"] == "4"


@pytest.mark.parametrize(
    "role, names",
    [
        ("scientist", {"a-gang", "a-early", "a-preempted"}),
        ("other", {"b-mid"}),
        ("manager", {"a-gang", "a-early", "a-preempted", "b-mid"}),
        ("admin", {"a-gang", "a-early", "a-preempted", "b-mid"}),
    ],
)
def test_a_scientist_sees_only_their_teams_top_jobs(jobs, users, client_for, role, names):
    c = client_for(users[role])
    page = c.get(f"/reports/top-jobs/?{DAY}")
    assert {r.record["name"] for r in page.context["table"].page.object_list} == names
    rows = list(csv.DictReader(io.StringIO(b"".join(c.get(f"/reports/top-jobs.csv?{DAY}").streaming_content).decode())))
    assert {r["name"] for r in rows} == names
    other_team = "team-b" if role == "scientist" else "team-a"
    if role in ("scientist", "other"):  # naming another team is a form error, never its jobs
        assert c.get(f"/reports/top-jobs.csv?{DAY}&team={other_team}").status_code == 400
        html = c.get(f"/reports/top-jobs/?{DAY}&team={other_team}").content.decode()
        assert "filter-errors" in html and "b-mid" not in html and "a-gang" not in html


def test_anonymous_readers_are_sent_to_log_in(client):
    assert client.get("/reports/top-jobs/").status_code == 302
    assert client.get("/reports/top-jobs.csv").status_code == 302


def test_a_shorter_ranking_is_the_head_of_the_longer(jobs, team_a):
    from quotas.models import Team
    from scheduling.usage import top_jobs
    from scheduling.usage.ranges import window_for

    window = window_for("custom", start=T0.date(), end=T0.date())
    top2 = top_jobs.top_jobs(window=window, teams=Team.objects.all(), types=None, top=2)
    assert [(r["rank"], r["name"]) for r in top2] == [(1, "a-gang"), (2, "b-mid")]
    assert top_jobs.top_jobs(window=window, teams=None, types=None, top=2) == top2
