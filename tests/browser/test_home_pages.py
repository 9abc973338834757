import pytest

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(
    "role, username, heading",
    [
        ("admin", "ada", "Cluster overview"),
        ("manager", "maya", "Utilization at a glance"),
        ("scientist", "sam", "My work"),
    ],
)
def test_each_role_logs_in_and_sees_its_home(users, login, page, role, username, heading):
    login(username)
    assert page.locator("h1").inner_text() == heading
    assert page.get_by_test_id("whoami").inner_text().startswith(username)
    path = screenshot(page, f"home-{role}")
    assert path.stat().st_size > 10_000


def test_logout_returns_to_the_login_page(users, login, page, live_server):
    login("sam")
    page.click("text=Log out")
    page.wait_for_url(f"{live_server.url}/login/")
    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url
