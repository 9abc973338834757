"""Login, logout, the role-aware home page, and the rule that every page needs a login."""

import pytest
from django.urls import reverse

from quotas.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/", "/profile/"])
def test_pages_need_a_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_page_and_health_check_are_open(client):
    from scheduling.models import AdmissionRun

    AdmissionRun.objects.create(duration_ms=5)
    assert client.get(reverse("login")).status_code == 200
    assert client.get("/healthz").json()["status"] == "ok"


def test_login_with_the_form_and_logout(client, scientist):
    response = client.post(reverse("login"), {"username": "sam", "password": "test-pass-123!"})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert client.get("/").status_code == 200
    client.post(reverse("logout"))
    assert client.get("/").status_code == 302


def test_wrong_password_is_a_form_error(client, scientist):
    response = client.post(reverse("login"), {"username": "sam", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


@pytest.mark.parametrize(
    "role, heading",
    [("admin", "Cluster overview"), ("manager", "Utilization at a glance"), ("scientist", "My work")],
)
def test_home_page_differs_by_role(users, client_for, role, heading):
    response = client_for(users[role]).get("/")
    assert response.status_code == 200
    assert f"<h1>{heading}</h1>" in response.content.decode()


def test_scientist_home_lists_only_their_teams(users, client_for):
    page = client_for(users["scientist"]).get("/").content.decode()
    assert "team-a" in page and "team-b" not in page


def test_admin_home_shows_capacity(users, client_for):
    page = client_for(users["admin"]).get("/").content.decode()
    assert "ml.p5.48xlarge" in page and "NVIDIA H100" in page


def test_profile_creates_shows_once_and_revokes_tokens(users, client_for, api_for):
    user = users["scientist"]
    client = client_for(user)
    response = client.post(reverse("profile"), {"name": "laptop"})
    key = response.context["new_key"]
    assert key and key.startswith("gqp_") and key in response.content.decode()
    token = ApiToken.objects.get(user=user)
    assert token.key_hash != key and key not in client.get(reverse("profile")).content.decode()

    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    me = api.get("/api/me/")
    assert me.status_code == 200 and me.json()["username"] == "sam" and me.json()["teams"] == ["team-a"]

    client.post(reverse("token-revoke", args=[token.pk]))
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    assert api.get("/api/me/").status_code == 401


def test_a_token_name_is_required(users, client_for):
    response = client_for(users["scientist"]).post(reverse("profile"), {"name": "  "}, follow=True)
    assert "Give the token a name" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_nobody_revokes_another_users_token(users, client_for):
    token, _ = ApiToken.issue(user=users["other"], name="theirs")
    response = client_for(users["scientist"]).post(reverse("token-revoke", args=[token.pk]))
    assert response.status_code == 404
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_api_needs_authentication(client):
    response = client.get("/api/me/")
    assert response.status_code in (401, 403)
    assert response["Content-Type"].startswith("application/json")


def test_session_auth_works_for_the_api(users, client_for):
    assert client_for(users["manager"]).get("/api/me/").json()["role"] == "manager"


def test_openapi_schema_and_docs_are_served(users, client_for):
    client = client_for(users["admin"])
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    body = schema.json() if schema["Content-Type"].endswith("json") else None
    if body is None:
        import yaml

        body = yaml.safe_load(schema.content)
    assert body["info"]["title"] == "GPU quota portal API"
    assert "/api/me/" in body["paths"]
    assert client.get("/api/docs/").status_code == 200


def test_logout_needs_post(users, client_for):
    assert client_for(users["admin"]).get(reverse("logout")).status_code == 405


def test_home_counts_preemptions_of_the_last_day(users, client_for, team_a):
    from datetime import timedelta

    from django.utils import timezone

    from scheduling.models import Job, JobEvent, JobState

    job = Job.objects.create(team=team_a, submitted_by=users["scientist"], name="j", image="x", accelerators=1)
    JobEvent.objects.create(job=job, to_state=JobState.PREEMPTED, from_state=JobState.RUNNING)
    JobEvent.objects.create(
        job=job, to_state=JobState.PREEMPTED, from_state=JobState.RUNNING, at=timezone.now() - timedelta(days=2)
    )
    counts = client_for(users["admin"]).get("/").context["job_counts"]
    assert counts["preempted (24 h)"] == 1 and counts["pending"] == 1
    other = client_for(users["other"]).get("/").context["job_counts"]  # not their team's job
    assert other["preempted (24 h)"] == 0 and other["pending"] == 0
