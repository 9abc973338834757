"""Login and token authentication are throttled per user and per address, with a clear message, and an
admin can lift a lockout."""

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from quotas.models import ApiToken
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def limits(settings):
    settings.AXES_FAILURE_LIMIT = 5


def attempt(url, username, password, address="10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(url, {"username": username, "password": password})


@pytest.mark.parametrize("url", ["/login/", "/django-admin/login/"])
def test_wrong_passwords_lock_the_account_even_for_the_right_one(url, admin_user):
    for _ in range(5):
        assert attempt(url, admin_user.username, "wrong").status_code in (200, 429)
    response = attempt(url, admin_user.username, PASSWORD)
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert "_auth_user_id" not in response.wsgi_request.session


def test_lockout_is_per_user_from_any_address_and_per_address_for_any_user(admin_user, scientist):
    for i in range(5):
        attempt("/login/", admin_user.username, "wrong", address=f"10.0.1.{i}")
    assert attempt("/login/", admin_user.username, PASSWORD, address="10.9.9.9").status_code == 429
    for i in range(5):
        attempt("/login/", f"nobody{i}", "wrong", address="10.0.2.1")
    assert attempt("/login/", scientist.username, PASSWORD, address="10.0.2.1").status_code == 429
    assert attempt("/login/", scientist.username, PASSWORD, address="10.0.3.1").status_code == 302


def test_an_admin_lifts_the_lockout(admin_user, scientist):
    for _ in range(5):
        attempt("/login/", scientist.username, "wrong")
    assert attempt("/login/", scientist.username, PASSWORD, address="10.0.4.1").status_code == 429
    call_command("axes_reset_username", scientist.username)
    assert attempt("/login/", scientist.username, PASSWORD, address="10.0.4.1").status_code == 302


def test_the_lockout_is_visible_to_admins_in_the_admin_site(admin_user, client_for, scientist):
    admin_user.is_staff = True
    admin_user.is_superuser = True
    admin_user.save()
    for _ in range(5):
        attempt("/login/", scientist.username, "wrong")
    page = client_for(admin_user).get("/django-admin/axes/accessattempt/").content.decode()
    assert scientist.username in page


def test_failed_tokens_are_limited_per_address(scientist):
    _, good = ApiToken.issue(user=scientist, name="ci")
    bad = APIClient(REMOTE_ADDR="10.1.0.1")
    bad.credentials(HTTP_AUTHORIZATION="Token gqp_wrong")
    codes = [bad.get("/api/me/").status_code for _ in range(11)]
    assert codes[:10] == [401] * 10 and codes[10] == 429
    assert "Too many failed token attempts" in bad.get("/api/me/").json()["detail"]
    same_address = APIClient(REMOTE_ADDR="10.1.0.1")
    same_address.credentials(HTTP_AUTHORIZATION=f"Token {good}")
    assert same_address.get("/api/me/").status_code == 429
    elsewhere = APIClient(REMOTE_ADDR="10.1.0.2")
    elsewhere.credentials(HTTP_AUTHORIZATION=f"Token {good}")
    assert elsewhere.get("/api/me/").status_code == 200


def test_api_calls_are_throttled_per_user(scientist, monkeypatch):
    from rest_framework.throttling import UserRateThrottle

    monkeypatch.setattr(UserRateThrottle, "rate", "3/minute", raising=False)
    _, key = ApiToken.issue(user=scientist, name="ci")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    codes = [api.get("/api/me/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
