"""/metrics: Prometheus text from the database at scrape time, behind a bearer token."""

from datetime import timedelta

import pytest
from django.urls import path
from prometheus_client.parser import text_string_to_metric_families

from scheduling.models import AdmissionRun, JobState
from scheduling.usage.metrics import metrics, preemption_reason
from tests.usage.conftest import T0, hours

pytestmark = pytest.mark.django_db

urlpatterns = [path("metrics", metrics)]  # the line portal/urls.py carries


@pytest.fixture(autouse=True)
def metrics_url(settings):
    settings.ROOT_URLCONF = "tests.usage.test_metrics"
    settings.METRICS_TOKEN = "s3cret-token"
    settings.METRICS_PUBLIC = False


def scrape(client):
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Token s3cret-token", "Bearer "])
def test_metrics_need_the_token(client, header):
    extra = {"HTTP_AUTHORIZATION": header} if header is not None else {}
    response = client.get("/metrics", **extra)
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")


def test_no_token_configured_means_closed_unless_public(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    settings.METRICS_PUBLIC = True
    assert client.get("/metrics").status_code == 200


def test_gauges_counters_and_loop_histogram(client, team_a, team_b, scientist, p5, add_job):
    add_job(
        team_a,
        scientist,
        p5,
        submitted=T0,
        accelerators=4,
        life=[
            (JobState.ADMITTED, T0 + hours(1)),
            (JobState.RUNNING, T0 + hours(1)),
            (JobState.PREEMPTED, T0 + hours(2), "preempted so team-b can reclaim its quota"),
        ],
        placement=[0],
    )
    running = add_job(
        team_a,
        scientist,
        p5,
        submitted=T0,
        accelerators=2,
        life=[(JobState.ADMITTED, T0 + hours(1)), (JobState.RUNNING, T0 + hours(1))],
    )
    running.placement = [0]
    running.save()
    add_job(team_b, scientist, p5, submitted=T0)
    for ms in (3, 40, 700, None):
        AdmissionRun.objects.create(duration_ms=ms, started_at=T0 + timedelta(seconds=ms or 0))
    AdmissionRun.objects.create(duration_ms=5, error="boom")
    families = scrape(client)

    def value(family, **labels):
        return next(s.value for s in families[family].samples if all(s.labels.get(k) == v for k, v in labels.items()))

    assert value("portal_team_quota", team="team-a", instance_type="ml.p5.48xlarge", resource="accelerators") == 8
    assert value("portal_team_usage", team="team-a", instance_type="ml.p5.48xlarge", resource="accelerators") == 2
    # memory in bytes, as Prometheus wants base units: team-a's 8 of 8 GPUs bring the node's 2048 GiB
    assert value("portal_team_quota", team="team-a", instance_type="ml.p5.48xlarge", resource="memory_bytes") == (
        2048 * 2**30
    )
    assert not [s for s in families["portal_team_quota"].samples if s.labels["resource"] == "memory"]
    assert value("portal_team_pending_jobs", team="team-b") == 1
    assert value("portal_admissions", team="team-a") == 2
    assert value("portal_preemptions", team="team-a", reason="reclaim") == 1
    assert value("portal_jobs", state="pending") == 1
    hist = {
        s.labels.get("le"): s.value
        for s in families["portal_admission_loop_duration_seconds"].samples
        if s.name.endswith("_bucket")
    }
    assert (hist["0.005"], hist["0.05"], hist["1.0"], hist["+Inf"]) == (2, 3, 4, 4)
    total = next(s.value for s in families["portal_admission_loop_duration_seconds"].samples if s.name.endswith("_sum"))
    assert total == pytest.approx(0.748)
    assert value("portal_admission_loop_errors") == 1


@pytest.mark.parametrize(
    "text, reason",
    [
        ("reclaim quota lent", "reclaim"),
        ("fair share: team-b is below", "fair-share"),
        ("a higher-priority job", "priority"),
        ("", "other"),
    ],
)
def test_preemption_reasons_from_event_words(text, reason):
    assert preemption_reason(text) == reason
