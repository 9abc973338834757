"""At 1366 px the admin's team list shows every column, its Quota / Edit links included, without scrolling the table
sideways (they were 47 px outside its box with the demo's teams)."""

import pytest
from django.utils import timezone

from quotas.demo import DEMO_PASSWORD, demo_load
from scheduling.demo_history import history_load
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_admin_team_list_fits_at_1366(browser, live_server):
    demo_load()
    history_load(days=2, now=timezone.now())
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", DEMO_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/teams/")
    box = page.evaluate(
        "(() => { const d = document.querySelector('table.glance').parentElement;"
        " return {client: d.clientWidth, scroll: d.scrollWidth}; })()"
    )
    screenshot(page, "team-list-1366")
    assert box["scroll"] <= box["client"], box
    last = page.locator("table.glance tbody tr").first.get_by_role("link", name="Edit")
    right = last.bounding_box()
    assert right["x"] + right["width"] <= 1366
    context.close()
