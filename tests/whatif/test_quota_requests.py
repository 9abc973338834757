"""Quota requests: a scientist asks, the request is replayed, an admin approves (a normal version naming the
request), changes or refuses with a reason; both sides are told (portal and e-mail); every step is recorded;
who may do what is checked on the server."""

from datetime import timedelta

import pytest
from django.core import mail
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse
from django.utils import timezone

from quotas.models import ComputeAllocation, ConfigVersion
from scheduling.whatif import requests as qr
from scheduling.whatif.models import Notification, QuotaRequest, ReplayStatus, RequestStatus
from scheduling.whatif.services import replay_run


@pytest.fixture
def emails(users):
    for name, user in users.items():
        user.email = f"{name}@example.org"
        user.save()
    return users


def _ask(user, team, it, accelerators=12, start_on=None, why="a bigger model"):
    return qr.quota_request_submit(
        user=user,
        team=team,
        instance_type=it,
        amounts={"accelerators": accelerators},
        start_on=start_on or timezone.localdate(),
        why=why,
    )


def test_ask_replay_approve_writes_a_version_naming_the_request(emails, team_a, p5, django_capture_on_commit_callbacks):
    scientist, admin = emails["scientist"], emails["admin"]
    with django_capture_on_commit_callbacks(execute=True):
        request = _ask(scientist, team_a, p5)
    assert request.current == {"accelerators": 8} and request.status == RequestStatus.PENDING
    request.replay.refresh_from_db()
    assert request.replay.status == ReplayStatus.DONE  # eager Celery ran it once the request committed
    assert any("accelerators: 8 → 12" in line or "GPUs: 8 → 12" in line for line in request.replay.changes)
    assert {m.to[0] for m in mail.outbox} == {"admin@example.org", "scientist@example.org"}
    assert Notification.objects.filter(user=admin, url__contains=f"/quota-requests/{request.pk}/").exists()

    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        qr.quota_request_approve(request=request, user=admin, reason="fits the plan")
    request.refresh_from_db()
    assert request.status == RequestStatus.APPLIED
    assert ComputeAllocation.objects.get(team=team_a, instance_type=p5).accelerators == 12
    version = ConfigVersion.objects.filter(team=team_a).order_by("-number").first()
    assert request.version == version and version.reason.startswith(f"quota request #{request.pk} by sam")
    assert version.author == admin
    assert "scientist@example.org" in {m.to[0] for m in mail.outbox}
    actions = list(request.events.values_list("action", flat=True))
    assert actions == ["submitted", "replayed", "approved", "applied"]


def test_change_then_refuse(emails, team_a, p5):
    scientist, admin = emails["scientist"], emails["admin"]
    request = _ask(scientist, team_a, p5, accelerators=16)
    first_replay = request.replay_id
    request = qr.quota_request_change(request=request, user=admin, amounts={"accelerators": 10}, reason="half")
    assert request.accelerators == 10 and request.replay_id != first_replay
    with pytest.raises(ValidationError, match="why"):
        qr.quota_request_refuse(request=request, user=admin, reason=" ")
    qr.quota_request_refuse(request=request, user=admin, reason="no budget")
    request.refresh_from_db()
    assert request.status == RequestStatus.REFUSED and request.decision_reason == "no budget"
    assert ComputeAllocation.objects.get(team=team_a, instance_type=p5).accelerators == 8
    assert Notification.objects.filter(user=scientist, text__contains="refused").exists()
    with pytest.raises(ValidationError, match="already refused"):
        qr.quota_request_approve(request=request, user=admin)


def test_a_future_date_waits_for_its_day(emails, team_a, p5):
    request = _ask(emails["scientist"], team_a, p5, start_on=timezone.localdate() + timedelta(days=3))
    qr.quota_request_approve(request=request, user=emails["admin"])
    request.refresh_from_db()
    assert request.status == RequestStatus.APPROVED
    assert qr.apply_due_requests(today=timezone.localdate() + timedelta(days=2)) == 0
    assert qr.apply_due_requests(today=timezone.localdate() + timedelta(days=3)) == 1
    request.refresh_from_db()
    assert request.status == RequestStatus.APPLIED
    assert ComputeAllocation.objects.get(team=team_a, instance_type=p5).accelerators == 12


def test_who_may_do_what(users, team_a, team_b, p5):
    with pytest.raises(PermissionDenied):
        _ask(users["other"], team_a, p5)  # not a member of team-a
    with pytest.raises(PermissionDenied):
        _ask(users["manager"], team_a, p5)  # managers read
    request = _ask(users["scientist"], team_a, p5)
    for role in ("scientist", "manager", "other"):
        with pytest.raises(PermissionDenied):
            qr.quota_request_approve(request=request, user=users[role])
    with pytest.raises(PermissionDenied):
        qr.quota_request_withdraw(request=request, user=users["other"])
    qr.quota_request_withdraw(request=request, user=users["scientist"])


def test_bad_input_is_a_clear_error_and_saves_nothing(users, team_a, p5):
    with pytest.raises(ValidationError, match="today or later"):
        _ask(users["scientist"], team_a, p5, start_on=timezone.localdate() - timedelta(days=1))
    with pytest.raises(ValidationError, match="say why"):
        _ask(users["scientist"], team_a, p5, why="  ")
    with pytest.raises(ValidationError, match="how much"):
        qr.quota_request_submit(
            user=users["scientist"], team=team_a, instance_type=p5, amounts={}, start_on=timezone.localdate(), why="x"
        )
    assert QuotaRequest.objects.count() == 0


ROLES = ["anonymous", "other", "scientist", "manager", "admin"]


@pytest.mark.parametrize("role", ROLES)
def test_pages_and_api_for_every_role(client_for, api_for, users, team_a, p5, role):
    request = _ask(users["scientist"], team_a, p5)
    replay_run(replay=request.replay)  # what the queued task does once the request commits
    user = None if role == "anonymous" else users[role]
    detail = client_for(user).get(reverse("whatif:request-detail", args=[request.pk]))
    assert detail.status_code == {"anonymous": 302, "other": 404}.get(role, 200)
    if role in ("manager", "admin"):
        assert 'data-testid="comparison"' in detail.content.decode()  # the replay beside the request
    if role == "scientist":
        assert 'data-testid="comparison"' not in detail.content.decode()  # other teams' figures stay hidden
        assert 'data-testid="own-comparison"' in detail.content.decode()  # its own team's figures are shown
        assert "team-b" not in detail.content.decode()
    listing = api_for(user).get("/api/quota-requests/")
    assert listing.status_code == (401 if role == "anonymous" else 200)
    if role != "anonymous":
        assert len(listing.json()["results"]) == (0 if role == "other" else 1)
    approve = api_for(user).post(f"/api/quota-requests/{request.pk}/approve/", {"reason": "ok"}, format="json")
    assert approve.status_code == {"anonymous": 401, "other": 404, "scientist": 403, "manager": 403}.get(role, 200)
    request.refresh_from_db()
    assert (request.status == RequestStatus.APPLIED) == (role == "admin")


def test_api_create_and_bad_input(api_for, users, team_a, team_b, p5):
    api = api_for(users["scientist"])
    today = timezone.localdate().isoformat()
    ok = api.post(
        "/api/quota-requests/",
        {"team": "team-a", "instance_type": p5.name, "accelerators": 4, "start_on": today, "why": "less is enough"},
        format="json",
    )
    assert ok.status_code == 201 and ok.json()["current"] == {"accelerators": 8} and ok.json()["replay"]
    other = api.post(
        "/api/quota-requests/",
        {"team": "team-b", "instance_type": p5.name, "accelerators": 4, "start_on": today, "why": "x"},
        format="json",
    )
    assert other.status_code == 400 and "no such team" in str(other.json())
    past = api.post(
        "/api/quota-requests/",
        {"team": "team-a", "instance_type": p5.name, "accelerators": 4, "start_on": "2000-01-01", "why": "x"},
        format="json",
    )
    assert past.status_code == 400 and "today or later" in str(past.json())
    assert QuotaRequest.objects.count() == 1
