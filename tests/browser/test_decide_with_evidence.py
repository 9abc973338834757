"""A scientist asks for more quota; the request is replayed; an admin reads the replay beside it and approves;
the team's history has the new version naming the request."""

import pytest
from playwright.sync_api import expect

from quotas.models import ComputeAllocation, ConfigVersion
from scheduling.whatif.models import QuotaRequest
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_request_replay_approve_new_version(users, team_a, team_b, p5, login, page, live_server):
    login("sam")
    page.goto(f"{live_server.url}/quota-requests/")
    page.get_by_role("button", name="Ask for quota").click()
    page.select_option("select[name=team]", label="team-a")
    page.select_option("select[name=instance_type]", label=p5.name)
    page.fill("input[name=accelerators]", "12")
    page.fill("textarea[name=why]", "the 70B run needs four more H100s")
    page.get_by_role("button", name="Send the request").click()
    expect(page.locator("[data-testid=request-status]")).to_have_text("Waiting for an admin")
    expect(page.locator("[data-testid=request-events]")).to_contain_text("asked for 12 GPUs on ml.p5.48xlarge")
    request = QuotaRequest.objects.get()

    page.context.clear_cookies()
    login("ada")
    page.goto(f"{live_server.url}/quota-requests/")
    expect(page.locator("[data-testid=notifications]")).to_contain_text("sam asks for 12 GPUs")
    page.get_by_role("link", name=str(request.pk), exact=True).click()
    # The replay ran in the eager worker when the request committed: its comparison is beside the request.
    expect(page.locator("[data-testid=comparison]")).to_be_visible()
    expect(page.locator("[data-testid=comparison] tr[data-team=team-a]").first).to_be_visible()
    screenshot(page, "quota-request-review")
    page.fill("input[name=reason]", "fits the quarter's plan")
    page.get_by_test_id("request-approve").click()
    expect(page.locator("[data-testid=request-status]")).to_have_text("Approved and in effect")

    assert ComputeAllocation.objects.get(team=team_a, instance_type=p5).accelerators == 12
    version = ConfigVersion.objects.filter(team=team_a).order_by("-number").first()
    assert version.reason.startswith(f"quota request #{request.pk} by sam")
    page.get_by_role("link", name=f"saved as version {version.number}").click()
    expect(page.locator("body")).to_contain_text(f"quota request #{request.pk} by sam")
    screenshot(page, "quota-request-history")


def test_the_team_page_unfolds_the_fair_share_derivation(users, team_a, team_b, login, page, live_server):
    login("sam")
    page.goto(f"{live_server.url}/teams/{team_a.pk}/")
    page.get_by_test_id("fair-share-explained").click()
    derivation = page.locator("[data-testid=derivation]").first
    expect(derivation).to_contain_text("The cohort “default” pools")
    expect(derivation.locator("li").last).to_have_text("Fair share of team-a on ml.p5.48xlarge: 0 GPUs.")


def test_allocation_draft_replayed_then_saved(users, team_a, team_b, p5, login, page, live_server):
    login("ada")
    page.goto(f"{live_server.url}/teams/{team_a.pk}/allocations/")
    gpus = page.locator(f"#t{p5.pk}-accelerators")
    gpus.fill("")
    gpus.press_sequentially("12", delay=30)
    page.get_by_test_id("replay-draft").click()  # "or 30 days"
    expect(page.locator("[data-testid=replay-changes]")).to_contain_text("GPUs: 8 → 12")
    expect(page.locator("[data-testid=comparison]")).to_be_visible()
    screenshot(page, "whatif-replay")
    page.fill("input[name=reason]", "replayed: nobody waits longer")
    page.get_by_test_id("replay-save").click()
    expect(page.locator(".flash-success")).to_contain_text("Saved the draft as the configuration")
    expect(page.locator("[data-testid=replay-decision]")).to_have_text("Saved as the configuration")
    assert ComputeAllocation.objects.get(team=team_a, instance_type=p5).accelerators == 12
    version = ConfigVersion.objects.filter(team=team_a).order_by("-number").first()
    assert version.reason.startswith("what-if replay #") and "/whatif/replays/" in version.reason
