"""The usage digest: chosen on the profile page, sent by the worker with the chart as a PNG and the CSV."""

import struct
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from scheduling.usage import digest
from scheduling.usage.models import DigestFrequency, DigestSubscription

pytestmark = pytest.mark.django_db


@pytest.fixture
def usage(team_a, team_b, p5, add_sample, add_day):
    now = timezone.now().replace(second=0, microsecond=0)
    for m in range(0, 180, 10):
        add_sample(team_a, p5, now - timedelta(minutes=m), used_acc=10, borrowed_acc=2, quota_acc=8)
        add_sample(team_b, p5, now - timedelta(minutes=m), used_acc=2, quota_acc=4, lent_acc=2)
    today = (now - timedelta(minutes=1)).replace(hour=0, minute=0)  # at midnight: the day that just ended
    add_day(team_a, p5, today, acc_hours=30, borrowed=6, quota_hours=24 * 8)
    add_day(team_b, p5, today, acc_hours=6, quota_hours=24 * 4)
    return now


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"  # the PNG signature
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.browser
def test_a_digest_carries_the_chart_as_png_and_the_summary_csv(usage, scientist):
    scientist.email = "sam@example.com"
    scientist.save()
    digest.digest_subscribe(user=scientist, frequency=DigestFrequency.DAILY)
    assert digest.digests_send_due(now=usage) == 1
    message = mail.outbox[0]
    assert message.to == ["sam@example.com"] and "team-a" in message.subject
    assert "team-a: 30 GPU-hours, 24 from its quota, 6 borrowed" in message.body
    assert "team-b" not in message.body  # a scientist's digest covers their teams only
    attachments = {name: (content, kind) for name, content, kind in message.attachments}
    png, kind = attachments["usage.png"]
    assert kind == "image/png" and png_size(png) == digest.CHART_SIZE and len(png) > 10_000
    csv_text, kind = next(v for k, v in attachments.items() if k.endswith(".csv"))
    assert kind == "text/csv" and csv_text.splitlines()[0].startswith("day,team,instance_type,accelerator_hours")
    assert DigestSubscription.objects.get(user=scientist).last_sent_at == usage
    assert digest.digests_send_due(now=usage + timedelta(hours=1)) == 0  # not again within the day
    assert digest.digests_send_due(now=usage + timedelta(days=1)) == 1


def test_without_a_browser_the_digest_says_so_in_one_line_and_goes_without_the_picture(
    usage, manager_user, monkeypatch
):
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    manager_user.email = "maya@example.com"
    manager_user.save()
    digest.digest_subscribe(user=manager_user, frequency=DigestFrequency.WEEKLY)
    assert digest.digests_send_due(now=usage) == 1
    message = mail.outbox[0]
    assert digest.NO_BROWSER in message.body.splitlines()
    assert [name for name, _, _ in message.attachments] == [f"usage-summary-{timezone.localtime(usage):%Y%m%d}.csv"]
    assert "team-a" in message.body and "team-b" in message.body  # a manager's covers every team


def test_the_profile_page_chooses_the_frequency(scientist, client_for):
    client = client_for(scientist)
    page = client.get("/profile/").content.decode()
    assert "Usage digest" in page and 'value="off" checked' in page
    response = client.post("/profile/digest/", {"frequency": "weekly"}, follow=True)
    assert response.status_code == 200 and 'value="weekly" checked' in response.content.decode()
    assert DigestSubscription.objects.get(user=scientist).frequency == "weekly"
    bad = client.post("/profile/digest/", {"frequency": "hourly"}, follow=True)
    assert "Choose no digest, daily or weekly." in bad.content.decode()
    assert DigestSubscription.objects.get(user=scientist).frequency == "weekly"


def test_no_digest_for_those_who_chose_none_or_have_no_team(usage, scientist, make_teamless):
    digest.digest_subscribe(user=scientist, frequency=DigestFrequency.OFF)
    loner = make_teamless
    digest.digest_subscribe(user=loner, frequency=DigestFrequency.DAILY)
    assert digest.digests_send_due(now=usage) == 0 and mail.outbox == []


@pytest.fixture
def make_teamless(db):
    from quotas.models import Role
    from tests.conftest import make_user

    user = make_user("nobody", Role.SCIENTIST)
    user.email = "nobody@example.com"
    user.save()
    return user


def test_a_managers_digest_carries_the_latest_right_sizing_advice(usage, manager_user, scientist, p5, team_a):
    from scheduling.whatif.models import Advice, AdviceKind

    old, new = usage - timedelta(days=7), usage - timedelta(hours=1)
    Advice.objects.create(
        batch=old, kind=AdviceKind.UNDERUSED, team=team_a, instance_type=p5, summary="stale", draft={}
    )
    Advice.objects.create(
        batch=new, kind=AdviceKind.UNDERUSED, team=team_a, instance_type=p5, summary="team-a: 8 -> 4 GPUs", draft={}
    )
    body = digest.digest_build(user=manager_user, frequency=DigestFrequency.WEEKLY, now=usage).body
    assert "- team-a: 8 -> 4 GPUs" in body and "stale" not in body
    assert "Right-sizing" not in digest.digest_build(user=scientist, frequency=DigestFrequency.WEEKLY, now=usage).body
