"""Lists people can use: sortable columns, numbered pages, a page size, the same filters, streamed CSV."""

from datetime import timedelta

import pytest
from django.http import StreamingHttpResponse
from django.utils import timezone

from scheduling.models import AdmissionRun, Job
from tests.numbers import figures, number

pytestmark = pytest.mark.django_db


@pytest.fixture
def many_jobs(team_a, team_b, scientist, other_scientist, p5):
    now = timezone.now()
    jobs = [
        Job(
            team=team_a if i % 3 else team_b,
            submitted_by=scientist if i % 3 else other_scientist,
            name=f"job-{i:03d}",
            instance_type=p5,
            accelerators=1 + i % 8,
            image="img",
            submitted_at=now - timedelta(minutes=i),
        )
        for i in range(120)
    ]
    return Job.objects.bulk_create(jobs)


def ids(response) -> list[int]:
    import re

    return [int(x) for x in re.findall(r'data-job="(\d+)"', response.content.decode())]


def test_job_list_pages_are_numbered_and_sized(many_jobs, manager_user, client_for):
    client = client_for(manager_user)
    first = client.get("/jobs/?mine=false")
    assert len(ids(first)) == 50 and number(figures(first.content)["jobs:count"]) == 120
    page = first.content.decode()
    for n in (1, 2, 3):
        assert f"page={n}" in page
    assert len(ids(client.get("/jobs/?mine=false&page=3"))) == 20
    assert len(ids(client.get("/jobs/?mine=false&per_page=25"))) == 25
    assert len(ids(client.get("/jobs/?mine=false&per_page=100000"))) == 50  # not an offered size: the default
    assert client.get("/jobs/?mine=false&page=999").status_code in (200, 404)


@pytest.mark.parametrize(
    "sort, key",
    [
        ("name", lambda j: j.name),
        ("-name", lambda j: j.name),
        ("submitted_at", lambda j: j.submitted_at),
        ("team", lambda j: j.team.name),
    ],
)
def test_job_list_sorts_by_a_column(many_jobs, manager_user, client_for, sort, key):
    shown = ids(client_for(manager_user).get(f"/jobs/?mine=false&sort={sort}&per_page=100"))
    jobs = {j.pk: j for j in Job.objects.select_related("team")}
    values = [key(jobs[pk]) for pk in shown]
    assert values == sorted(values, reverse=sort.startswith("-"))


def test_sorting_keeps_the_filters(many_jobs, manager_user, client_for, team_b):
    shown = ids(client_for(manager_user).get("/jobs/?team=team-b&mine=false&sort=-name"))
    assert shown and all(Job.objects.get(pk=pk).team == team_b for pk in shown)
    assert Job.objects.filter(pk__in=shown).count() == Job.objects.filter(team=team_b).count() == len(shown)


def test_an_unknown_sort_column_is_ignored(many_jobs, manager_user, client_for):
    assert client_for(manager_user).get("/jobs/?mine=false&sort=password").status_code == 200


def test_admission_runs_page_and_sort(users, client_for):
    now = timezone.now()
    AdmissionRun.objects.bulk_create(
        AdmissionRun(started_at=now - timedelta(seconds=i), duration_ms=i, admitted=i % 5) for i in range(130)
    )
    client = client_for(users["admin"])
    page = client.get("/admission-runs/?sort=-duration_ms&per_page=25")
    assert page.status_code == 200
    assert number(figures(page.content)["runs:count"]) == 130
    assert "129.0 ms" in page.content.decode().split("</tr>")[1]  # the slowest first


@pytest.mark.parametrize(
    "url", ["/jobs/?mine=false&export=csv", "/reports/jobs.csv?range=30d", "/reports/summary.csv?range=30d"]
)
def test_every_export_streams(many_jobs, manager_user, client_for, url):
    response = client_for(manager_user).get(url)
    assert isinstance(response, StreamingHttpResponse) and response["Content-Type"] == "text/csv"
    lines = b"".join(response.streaming_content).decode().strip().splitlines()
    if "summary" not in url:
        assert len(lines) == 1 + 120


def test_the_job_report_reads_its_jobs_a_chunk_at_a_time(many_jobs):
    from scheduling.usage.selectors import job_report_rows

    pulled = 0

    def jobs():
        nonlocal pulled
        for job in Job.objects.select_related("team", "submitted_by", "instance_type"):
            pulled += 1
            yield job

    rows = job_report_rows(jobs(), chunk=10)
    next(rows)
    assert pulled == 10  # not the 120 a list() would have read
    assert len(list(rows)) == 119


def test_exports_read_jobs_newest_first_across_chunk_boundaries(many_jobs):
    from scheduling.selectors import newest_first_in_chunks

    same_time = timezone.now() - timedelta(days=1)
    Job.objects.filter(pk__in=[j.pk for j in many_jobs[:30]]).update(submitted_at=same_time)  # ties on the key
    read = [job.pk for job in newest_first_in_chunks(Job.objects.all(), size=7)]
    expected = list(Job.objects.order_by("-submitted_at", "-id").values_list("pk", flat=True))
    assert read == expected and len(read) == 120
