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


def test_the_why_column_shows_the_whole_reason_and_fits_a_phone(users, login, page, live_server, scientist, p5):
    """A reason's numbers come last: the home page's Why column shows it whole, and at 390 px nothing is wider
    than the screen (the table scrolls inside its own box, as every table does on a phone)."""
    from scheduling.models import Job
    from scheduling.services import JobRequest, job_submit

    request = JobRequest(team="team-a", name="long-why", image="img", accelerators=8, vcpus=4, memory_gib=32)
    job = job_submit(user=scientist, request=request)
    reason = (
        "Waiting: team-a uses 30 of its 8-GPU quota on ml.p5.48xlarge and cohort default has 2 idle GPUs to "
        "lend of the 16 it would need; next in line once 14 GPUs are released by 3 running jobs"
    )
    Job.objects.filter(pk=job.pk).update(reason=reason)
    page.set_viewport_size({"width": 390, "height": 844})
    login("sam")
    cell = page.locator(f'[data-n="why:{job.pk}"]')
    assert cell.inner_text() == reason
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = cell.bounding_box()
    table = page.locator("table").first.bounding_box()
    assert box["width"] <= 32 * 16 and table["x"] + table["width"] <= 390
