"""Who sees and touches which job, in pages, API, CSV and the command: one table of cases per surface.

A scientist of another team gets 404 for a job, never 403: the answer must not confirm that it exists.
"""

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from scheduling.models import Job, JobState

pytestmark = pytest.mark.django_db

# role -> may see team-a's job, may cancel it
ROLES = {
    "anonymous": (False, False),
    "other": (False, False),  # scientist of team-b
    "scientist": (True, True),  # scientist of team-a
    "manager": (True, False),
    "admin": (True, True),
}


@pytest.fixture
def job(scientist, team_a, submit):
    return submit(scientist, team_a, name="secret-run")


def who(users, role):
    return None if role == "anonymous" else users[role]


@pytest.mark.parametrize("role", ROLES)
def test_job_pages_by_role(role, users, job, client_for):
    can_see, _ = ROLES[role]
    client = client_for(who(users, role))
    for name in ("jobs:job-detail", "jobs:job-status"):
        response = client.get(reverse(name, args=[job.pk]))
        if role == "anonymous":
            assert response.status_code == 302 and "/login/" in response["Location"]
        else:
            assert response.status_code == (200 if can_see else 404), name
    listing = client.get(reverse("jobs:job-list") + "?mine=false")
    if role != "anonymous":
        assert listing.status_code == 200
        assert (b"secret-run" in listing.content) == can_see
        csv = client.get(reverse("jobs:job-list") + "?mine=false&export=csv")
        body = b"".join(csv.streaming_content)
        assert body.startswith(b"id,name,team,user,state")
        assert (b"secret-run" in body) == can_see


@pytest.mark.parametrize("role", ROLES)
def test_cancel_by_role(role, users, job, client_for):
    can_see, can_cancel = ROLES[role]
    response = client_for(who(users, role)).post(reverse("jobs:job-cancel", args=[job.pk]))
    job.refresh_from_db()
    if role == "anonymous":
        assert response.status_code == 302 and "/login/" in response["Location"]
    elif not can_see:
        assert response.status_code == 404
    elif not can_cancel:
        assert response.status_code == 403
    else:
        assert response.status_code == 302
    assert (job.state == JobState.CANCELLED) == can_cancel


@pytest.mark.parametrize("role", ROLES)
def test_api_by_role(role, users, job, api_for):
    can_see, can_cancel = ROLES[role]
    api = api_for(who(users, role))
    detail = api.get(f"/api/jobs/{job.pk}/")
    listing = api.get("/api/jobs/")
    cancel = api.post(f"/api/jobs/{job.pk}/cancel/")
    if role == "anonymous":
        assert {detail.status_code, listing.status_code, cancel.status_code} <= {401, 403}
        return
    assert detail.status_code == (200 if can_see else 404)
    assert [j["name"] for j in listing.json()["results"]] == (["secret-run"] if can_see else [])
    assert cancel.status_code == (200 if can_cancel else 404 if not can_see else 403)


def test_guessing_ids_tells_nothing(other_scientist, job, client_for, api_for):
    client, api = client_for(other_scientist), api_for(other_scientist)
    missing = job.pk + 1000
    for pk in (job.pk, missing):
        assert client.get(reverse("jobs:job-detail", args=[pk])).status_code == 404
        assert client.post(reverse("jobs:job-cancel", args=[pk])).status_code == 404
        assert api.get(f"/api/jobs/{pk}/").json() == api.get(f"/api/jobs/{missing}/").json()
    assert client.get(reverse("jobs:job-submit") + f"?clone={job.pk}").status_code == 404


@pytest.mark.parametrize("action", ["show", "cancel"])
def test_command_hides_other_teams_jobs(action, other_scientist, job):
    with pytest.raises(CommandError, match=f"no job #{job.pk}"):
        call_command("jobs", action, "--user", other_scientist.username, str(job.pk))
    assert Job.objects.get(pk=job.pk).state == JobState.PENDING


def test_command_list_shows_only_visible_jobs(other_scientist, scientist, job, capsys):
    call_command("jobs", "list", "--user", other_scientist.username)
    assert "secret-run" not in capsys.readouterr().out
    call_command("jobs", "list", "--user", scientist.username)
    assert "secret-run" in capsys.readouterr().out


def test_admission_runs_page_is_for_admins(users, client_for):
    for role, status in {"admin": 200, "manager": 403, "scientist": 403, "other": 403}.items():
        assert client_for(users[role]).get(reverse("jobs:admission-runs")).status_code == status
    assert client_for(users["admin"]).get("/api/admission-runs/").status_code == 200
    assert client_for(users["scientist"]).get("/api/admission-runs/").status_code == 403


def test_the_job_list_costs_the_same_queries_for_many_jobs(
    scientist, team_a, submit, client_for, django_assert_max_num_queries
):
    client = client_for(scientist)
    for i in range(3):
        submit(scientist, team_a, name=f"few-{i}")
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        assert client.get(reverse("jobs:job-list")).status_code == 200
    for i in range(40):
        submit(scientist, team_a, name=f"many-{i}")
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(reverse("jobs:job-list")).status_code == 200
