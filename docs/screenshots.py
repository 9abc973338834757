"""Take the README's screenshots from a running ./run.sh (Playwright driving Debian's Chromium, 1366 px wide).

    PORT=8200 ./run.sh &            # a fresh var/ gives the demo its 30 days of history
    PORTAL_URL=http://127.0.0.1:8200 .venv/bin/python docs/screenshots.py

Writes docs/img/*.png. Nothing here is staged: it logs in as the demo users and opens their pages.
"""

import os
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

URL = os.environ.get("PORTAL_URL", "http://127.0.0.1:8000").rstrip("/")
OUT = Path(__file__).resolve().parent / "img"
PASSWORD = "demo-portal-2026"
WIDTH = 1366


def login(page, username):
    page.context.clear_cookies()
    page.goto(f"{URL}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{URL}/")


def shot(page, name, *, full_page=False):
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    print(f"{path.relative_to(OUT.parent.parent)}")


def main() -> int:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        page = browser.new_context(viewport={"width": WIDTH, "height": 900}).new_page()
        page.set_default_timeout(20_000)

        login(page, "admin")
        shot(page, "home-admin")
        page.goto(f"{URL}/teams/")
        shot(page, "team-list")
        page.click("text=llm-pretraining")
        page.click("text=Edit allocation")
        row = page.locator("tr", has=page.locator("text=ml.p5.48xlarge")).first
        gpus = row.locator("input[id$='-accelerators']")
        gpus.fill("4")
        page.wait_for_timeout(800)
        row.locator("input[id$='-memory_gib']").fill("768")
        page.wait_for_timeout(800)
        shot(page, "allocation-editor-override")

        login(page, "sam")
        page.goto(f"{URL}/jobs/?state=pending&mine=false")
        first = page.locator("[data-testid=job-table] tbody tr[data-job] a").first
        if first.count():
            first.click()
            page.wait_for_timeout(500)
            shot(page, "job-waiting", full_page=True)
        else:
            print("no waiting job of sam's teams right now: job-waiting.png left as it was", file=sys.stderr)

        login(page, "manager")
        page.goto(f"{URL}/usage/?range=7d")
        page.wait_for_function("document.getElementById('chart-usage-gpu').dataset.drawn")
        page.wait_for_timeout(500)
        shot(page, "usage-7d", full_page=True)
        page.goto(f"{URL}/reports/?range=30d")
        page.wait_for_timeout(800)
        shot(page, "reports-30d", full_page=True)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
