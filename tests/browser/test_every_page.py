"""Every page of every role, at 1366 px and at 390 px: no horizontal scrolling, no console error, no HTTP error,
no request to another site; at 390 px the navigation folds behind a Menu toggle."""

from urllib.parse import urlparse

import pytest
from django.utils import timezone

from quotas.demo import DEMO_PASSWORD, demo_load
from quotas.models import Team
from scheduling.demo_history import history_load
from scheduling.models import Job
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}
USERS = {"admin": "admin", "manager": "manager", "scientist": "sam"}


@pytest.fixture
def demo(db):
    demo_load()
    history_load(days=2, now=timezone.now())


def urls_for(role: str) -> list[str]:
    from django.urls import reverse

    from portal.navigation import entries_for
    from quotas.models import User

    user = User.objects.get(username=USERS[role])
    team = Team.objects.visible_to(user).order_by("name").first()
    job = Job.objects.visible_to(user).order_by("-pk").first()
    urls = [e["url"] for e in entries_for(user)]
    urls += [
        reverse("profile"),
        reverse("quotas:team-detail", args=[team.pk]),
        reverse("quotas:team-history", args=[team.pk]),
        reverse("jobs:job-detail", args=[job.pk]),
        reverse("usage:team", args=[team.name]),
        reverse("usage:jobs-report"),
        "/reports/top-jobs/?range=30d&sort=-wait_minutes",
        "/usage/?range=24h",
        "/reports/?range=90d",
        "/jobs/?mine=false&page=2&sort=-name",
        reverse("api-docs"),
        reverse("api-redoc"),
    ]
    if role == "admin":
        urls += [reverse("quotas:allocations", args=[team.pk]), reverse("quotas:team-edit", args=[team.pk])]
        urls += [reverse("kube:check"), reverse("kube:kueue"), reverse("kube:workloads")]
    return urls


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("role", list(USERS))
def test_every_page_fits_and_loads_cleanly(demo, browser, live_server, role, width):
    w, h = WIDTHS[width]
    context = browser.new_context(viewport={"width": w, "height": h})
    page = context.new_page()
    page.set_default_timeout(20_000)
    problems: list[str] = []
    here = urlparse(live_server.url).netloc
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text} at {page.url}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"))
    page.on(
        "request",
        lambda r: (
            urlparse(r.url).scheme in ("http", "https")
            and urlparse(r.url).netloc != here
            and problems.append(f"left the site: {r.url}")
        ),
    )
    page.goto(f"{live_server.url}/login/")
    assert page.locator("h1").count() == 1
    page.fill("input[name=username]", USERS[role])
    page.fill("input[name=password]", DEMO_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")

    if width == "phone":
        logout = page.locator("form[action='/logout/'] button")
        assert not logout.is_visible()  # folded away
        page.click("label[for=nav-toggle]")
        assert logout.is_visible()
        box = logout.bounding_box()
        assert box["x"] + box["width"] <= w

    for url in urls_for(role):
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("load")
        if page.locator("[data-chart]").count():
            page.wait_for_function("[...document.querySelectorAll('[data-chart]')].every(e => e.dataset.drawn)")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if overflow > 1:
            screenshot(page, f"overflow-{role}-{width}-{url.strip('/').replace('/', '-') or 'home'}")
            problems.append(f"{url}: {overflow} px wider than the screen")
        if "/api/" not in url:
            h1 = page.locator("main h1").count()
            if h1 != 1:
                problems.append(f"{url}: {h1} h1 elements")
            unlabelled = page.evaluate(
                """[...document.querySelectorAll('main input:not([type=hidden]), main select, main textarea')]
                   .filter(e => !e.labels.length && !e.getAttribute('aria-label')
                               && !e.getAttribute('aria-labelledby') && !e.closest('form[hidden]'))
                   .map(e => e.name || e.id)"""
            )
            if unlabelled:
                problems.append(f"{url}: inputs without a label: {unlabelled}")
    context.close()
    assert not problems, "\n".join(problems)
