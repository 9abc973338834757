"""Another team's job, or a mistyped address, answers 404 in the site's own layout (navigation, a way home), at
both widths, and the page says nothing about whether the job exists."""

import pytest

from scheduling.services import JobRequest, job_submit
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1366, 390])
def test_another_teams_job_is_a_404_page_in_the_layout(other_scientist, scientist, browser, live_server, width):
    theirs = job_submit(
        user=other_scientist,
        request=JobRequest(team="team-b", name="secret-run", accelerators=1, image="pytorch:2", expected_duration_s=60),
    )
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "sam")
    page.fill("input[name=password]", "test-pass-123!")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")

    for url in (f"/jobs/{theirs.pk}/", f"/jobs/{theirs.pk + 1000}/", "/no-such-page/"):
        response = page.goto(f"{live_server.url}{url}")
        assert response.status == 404, url
        assert page.get_by_test_id("not-found").is_visible(), url  # ours, not Django's bare "Not Found"
        assert page.locator("main h1").inner_text() == "Page not found"
        assert page.locator("header nav").count() == 1 and page.get_by_test_id("whoami").count() == 1
        assert "secret-run" not in page.content() and "team-b" not in page.content()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(page, f"not-found-{width}")
    context.close()
