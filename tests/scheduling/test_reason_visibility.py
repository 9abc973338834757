"""A reason never names what its reader may not see: another team's job is "another team's job" on the
pages, in the API, in the CSV exports and in the command, for scientists outside that team; admins and
managers (who see every job) read the full detail."""

import csv
import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from scheduling.loop import admission_run
from scheduling.models import Job, JobState
from scheduling.reasons import ANONYMOUS, ReasonPresenter

pytestmark = pytest.mark.django_db


@pytest.fixture
def preempted(scientist, other_scientist, team_a, team_b, submit):
    """team-a's job borrows team-b's quota; team-b's secret job reclaims it."""
    borrower = submit(scientist, team_a, name="borrower", accelerators=8, pods=2)
    admission_run()
    owner = submit(other_scientist, team_b, name="secret-project", accelerators=4)
    admission_run()
    borrower.refresh_from_db()
    assert borrower.preemption_count == 1
    return borrower, owner


def leaks(text: str, owner: Job) -> bool:
    return f"#{owner.pk}" in text or "secret-project" in text or "team-b" in text


def test_the_stored_reason_is_complete(preempted):
    borrower, owner = preempted
    assert any(f"job #{owner.pk} secret-project of team-b" in e.reason for e in borrower.events.all())


def test_presenter_anonymises_for_outsiders_only(preempted, scientist, other_scientist, manager_user, admin_user):
    borrower, owner = preempted
    text = borrower.events.get(to_state=JobState.PREEMPTED).reason
    outsider = ReasonPresenter(scientist)(text)
    assert not leaks(outsider, owner)
    assert outsider.startswith(f"preempted by {ANONYMOUS} ")
    for reader in (other_scientist, manager_user, admin_user):
        assert ReasonPresenter(reader)(text) == text
    assert ReasonPresenter(None)(text) == outsider


def test_job_page_and_status_fragment(preempted, scientist, admin_user, client_for):
    borrower, owner = preempted
    for name in ("jobs:job-detail", "jobs:job-status"):
        page = client_for(scientist).get(reverse(name, args=[borrower.pk])).content.decode()
        assert not leaks(page, owner), name
        assert ANONYMOUS.replace("'", "&#x27;") in page
    admin_page = client_for(admin_user).get(reverse("jobs:job-detail", args=[borrower.pk])).content.decode()
    assert "secret-project" in admin_page


def test_job_list_home_and_csv(preempted, scientist, client_for):
    borrower, owner = preempted
    client = client_for(scientist)
    for url in (reverse("jobs:job-list"), reverse("home")):
        assert not leaks(client.get(url).content.decode(), owner), url
    body = b"".join(client.get(reverse("jobs:job-list"), {"export": "csv"}).streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert rows and not any(leaks(r["reason"], owner) for r in rows)


def test_api_list_detail_and_events(preempted, scientist, admin_user, api_for):
    borrower, owner = preempted
    api = api_for(scientist)
    detail = api.get(f"/api/jobs/{borrower.pk}/").json()
    assert not leaks(str(detail), owner)
    assert any(ANONYMOUS in e["reason"] for e in detail["events"])
    assert not leaks(str(api.get("/api/jobs/").json()), owner)
    full = api_for(admin_user).get(f"/api/jobs/{borrower.pk}/").json()
    assert any("secret-project" in e["reason"] for e in full["events"])


def test_jobs_command_show_and_list(preempted, scientist):
    borrower, owner = preempted
    for args in (["show", str(borrower.pk)], ["list"]):
        out = io.StringIO()
        call_command("jobs", *args, "--user", scientist.username, stdout=out)
        assert not leaks(out.getvalue(), owner), args


@pytest.mark.parametrize(
    "template, expected",
    [
        (
            "waits behind job #{o} of team-b; fits now, but would delay job #{o}'s reservation",
            "waits behind another team's job; fits now, but would delay another team's job's reservation",
        ),
        (
            "reserved: starts in 5 min on ml.p5.48xlarge, when jobs #{o}, #{m} end",
            "reserved: starts in 5 min on ml.p5.48xlarge, when jobs #{m} and another team's job end",
        ),
        ("when jobs #{o}, #{o} and #{o} end", "when other teams' jobs end"),
        ("on ml.p5.48xlarge, when job #{o} ends", "on ml.p5.48xlarge, when another team's job ends"),
        ("back in the queue after being preempted by job #{m}", "back in the queue after being preempted by job #{m}"),
    ],
)
def test_engine_and_plan_wordings(preempted, scientist, template, expected):
    borrower, owner = preempted
    text = template.format(o=owner.pk, m=borrower.pk)
    assert ReasonPresenter(scientist)(text) == expected.format(o=owner.pk, m=borrower.pk)
