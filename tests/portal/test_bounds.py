"""Bounds, one place each (scheduling.engine.bounds): every path that takes a number refuses what is out of
range with a 400 or a form error, and none of the audit's 500s comes back."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from quotas import services
from quotas.models import ComputeAllocation, InstanceType, NodeGroup
from scheduling.engine import bounds
from scheduling.engine.scenario import ScenarioError, parse_scenario
from scheduling.models import Job, JobState

pytestmark = pytest.mark.django_db


def test_engine_bounds_module_is_pure():
    import ast
    import pathlib

    tree = ast.parse(pathlib.Path(bounds.__file__).read_text())
    imported = {n.names[0].name for n in ast.walk(tree) if isinstance(n, ast.Import)}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not any(name.startswith(("django", "kubernetes", "quotas", "scheduling")) for name in imported)


@pytest.mark.parametrize(
    "value, ok",
    [(0, True), (0.001, True), (1e-320, False), (5e-4, False), (1e308, False), (float("nan"), False), (-1, False)],
)
def test_quantity_problem(value, ok):
    assert (bounds.quantity_problem(value, bounds.MAX_QUOTA_VCPUS) is None) is ok


def test_json_depth():
    deep = current = {}
    for _ in range(100):
        current["a"] = current = {}
    assert bounds.json_depth_exceeds(deep)
    assert not bounds.json_depth_exceeds({"allocations": {"ml.p5": {"vcpus": 1}}})


def test_node_count_beyond_the_bound_is_a_400_and_nothing_changes(admin_user, api_for, p5):
    group = NodeGroup.objects.get()
    response = api_for(admin_user).patch(f"/api/node-groups/{group.pk}/", {"node_count": 2_147_483_647}, format="json")
    assert response.status_code == 400, response.content
    assert "20000" in json.dumps(response.json()) or "20,000" in json.dumps(response.json())
    group.refresh_from_db()
    assert group.node_count == 2


def test_the_whole_cluster_is_bounded_across_node_groups(admin_user, p5):
    services.node_group_save(name="big-1", instance_type=p5, node_count=bounds.MAX_CLUSTER_NODES - 2)
    with pytest.raises(Exception) as caught:
        services.node_group_save(name="big-2", instance_type=p5, node_count=1)
    assert "at most 20,000" in str(caught.value)


def test_node_count_form_refuses_absurd_values(admin_user, client_for, p5):
    response = client_for(admin_user).post(
        reverse("quotas:node-group-create"), {"name": "huge", "instance_type": p5.pk, "node_count": 2_147_483_647}
    )
    assert response.status_code in (200, 400)
    assert not NodeGroup.objects.filter(name="huge").exists()


@pytest.mark.parametrize("field, value", [("vcpus", 1e308), ("vcpus", 1e-320), ("memory_gib", 1e-320)])
def test_allocation_api_refuses_absurd_quantities(admin_user, api_for, team_a, field, value):
    alloc = ComputeAllocation.objects.get(team=team_a)
    response = api_for(admin_user).patch(f"/api/allocations/{alloc.pk}/", {field: value}, format="json")
    assert response.status_code == 400, response.content
    alloc.refresh_from_db()
    assert getattr(alloc, field) is None
    assert api_for(admin_user).get("/api/teams/").status_code == 200


def test_cluster_page_survives_the_largest_allowed_quota(admin_user, client_for, team_a):
    services.allocations_update(team=team_a, allocations={"ml.p5.48xlarge": {"vcpus": bounds.MAX_QUOTA_VCPUS}})
    assert client_for(admin_user).get(reverse("quotas:cluster")).status_code == 200


def test_allocation_editor_form_refuses_vanishing_amounts(admin_user, client_for, team_a, p5):
    url = reverse("quotas:allocations", args=[team_a.pk])
    prefix = f"t{p5.pk}"
    response = client_for(admin_user).post(
        url, {f"{prefix}-vcpus": "1e-320", f"{prefix}-vcpus_src": "set", f"{prefix}-accelerators_src": "default"}
    )
    assert response.status_code in (200, 400)
    assert ComputeAllocation.objects.get(team=team_a).vcpus is None


def test_allocation_preview_with_vanishing_amounts_is_not_a_500(admin_user, client_for, team_a, p5):
    url = reverse("quotas:allocation-preview", args=[team_a.pk])
    prefix = f"t{p5.pk}"
    response = client_for(admin_user).get(
        url,
        {"type": p5.pk, f"{prefix}-vcpus": "1e-320", f"{prefix}-vcpus_src": "set"},
        headers={"HX-Trigger-Name": f"{prefix}-vcpus"},
    )
    assert response.status_code == 200
    assert "at least 0.001" in response.content.decode()


def test_allocation_preview_with_a_type_that_is_not_a_number_is_a_404(admin_user, client_for, team_a):
    url = reverse("quotas:allocation-preview", args=[team_a.pk])
    assert client_for(admin_user).get(url, {"type": "abc"}).status_code == 404
    assert client_for(admin_user).get(url, {"type": "²"}).status_code == 404


def test_instance_type_per_node_bounds(admin_user, api_for):
    body = {"name": "ml.huge", "vcpus": 10**6, "memory_gib": 10**9, "accelerators": 1000}
    response = api_for(admin_user).post("/api/instance-types/", body, format="json")
    assert response.status_code == 400
    assert set(response.json()) >= {"vcpus", "memory_gib", "accelerators"}
    assert not InstanceType.objects.filter(name="ml.huge").exists()


@pytest.mark.parametrize("name", ['<a href="x">p5</a>', "ml p5", "ml.p5\u202e"])
def test_instance_type_names_are_a_safe_charset(admin_user, api_for, name):
    body = {"name": name, "vcpus": 8, "memory_gib": 32}
    response = api_for(admin_user).post("/api/instance-types/", body, format="json")
    assert response.status_code == 400
    assert "name" in response.json()


def test_priority_class_weight_is_bounded_not_a_database_error(admin_user, api_for):
    response = api_for(admin_user).post("/api/priority-classes/", {"name": "huge", "weight": 2**40}, format="json")
    assert response.status_code == 400
    assert "weight" in response.json()


def test_scenario_reader_shares_the_bounds():
    data = {
        "cluster": {"instance_types": [{"name": "g", "count": bounds.MAX_NODES_PER_GROUP + 1, "capacity": {"gpu": 8}}]},
        "teams": [{"name": "a", "quota": {"g": {"gpu": 8}}}],
    }
    with pytest.raises(ScenarioError, match="at most 20000"):
        parse_scenario(data)
    data["cluster"]["instance_types"][0]["count"] = 2
    data["workloads"] = [{"name": "w", "team": "a", "requests": {"gpu": 1}, "pods": bounds.MAX_PODS_PER_JOB + 1}]
    with pytest.raises(ScenarioError, match="pods: must be at most"):
        parse_scenario(data)


# --- dates, pages and bodies ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["/usage/", "/reports/", "/reports/jobs/", "/reports/jobs.csv", "/api/usage/series/", "/api/usage/summary/"]
)
def test_dates_in_the_year_9999_are_refused_not_a_500(manager_user, client_for, url):
    response = client_for(manager_user).get(url, {"range": "custom", "start": "9999-12-30", "end": "9999-12-31"})
    assert response.status_code in (200, 400), response.status_code
    if response.status_code == 200 and response["Content-Type"].startswith("text/html"):
        assert "between 2000 and 2100" in response.content.decode()


def test_job_list_date_filter_is_bounded(scientist, api_for):
    response = api_for(scientist).get("/api/jobs/", {"submitted_after": "9999-12-31"})
    assert response.status_code == 400


@pytest.mark.parametrize("url", ["/api/jobs/", "/api/teams/", "/api/admission-runs/", "/api/usage/jobs/"])
def test_limit_beyond_bigint_is_clamped_and_offset_beyond_the_bound_is_a_400(admin_user, api_for, url):
    api = api_for(admin_user)
    response = api.get(url, {"limit": "99999999999999999999999"})
    assert response.status_code == 200, response.content
    assert api.get(url, {"offset": "99999999999999999999999"}).status_code == 400


def test_page_size_is_bounded(admin_user, api_for, team_a):
    from scheduling.models import AdmissionRun

    AdmissionRun.objects.bulk_create([AdmissionRun() for _ in range(bounds.MAX_PAGE_SIZE + 5)])
    body = api_for(admin_user).get("/api/admission-runs/", {"limit": 10**6}).json()
    assert len(body["results"]) == bounds.MAX_PAGE_SIZE


def test_json_nested_1000_levels_is_a_400(scientist, api_for):
    body = "[" * 1000 + "]" * 1000
    response = api_for(scientist).generic("POST", "/api/jobs/", body, content_type="application/json")
    assert response.status_code == 400
    assert "nested" in response.json()["detail"]
    deep = '{"a":' * 200 + "1" + "}" * 200
    response = api_for(scientist).generic("POST", "/api/jobs/", deep, content_type="application/json")
    assert response.status_code == 400


# --- the other 500s -------------------------------------------------------------------------------------


@pytest.fixture
def cancelled_job(scientist, team_a, p5):
    return Job.objects.create(
        team=team_a, submitted_by=scientist, name="done", image="pytorch:2", accelerators=1, state=JobState.CANCELLED
    )


@pytest.mark.parametrize("target", ["x", "https://evil.example/", "//evil.example/", "/\\evil.example"])
def test_cancel_redirects_only_on_site(scientist, client_for, cancelled_job, target):
    response = client_for(scientist).post(reverse("jobs:job-cancel", args=[cancelled_job.pk]), {"next": target})
    assert response.status_code == 302
    assert response["Location"] == reverse("jobs:job-list")


def test_cancel_keeps_a_next_on_site(scientist, client_for, cancelled_job):
    target = reverse("jobs:job-detail", args=[cancelled_job.pk])
    response = client_for(scientist).post(reverse("jobs:job-cancel", args=[cancelled_job.pk]), {"next": target})
    assert response["Location"] == target


def test_metrics_with_a_non_ascii_bearer_token_is_a_401(settings):
    settings.METRICS_TOKEN = "s3cret"
    settings.METRICS_PUBLIC = False
    response = Client().get("/metrics", headers={"Authorization": "Bearer Grüße"})
    assert response.status_code == 401
    assert Client().get("/metrics", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_options_on_the_cluster_policy(admin_user, scientist, api_for):
    assert api_for(admin_user).options("/api/cluster-policy/current/").status_code == 200
    assert api_for(scientist).options("/api/cluster-policy/current/").status_code == 200


@pytest.mark.parametrize("pk", ["²", "99999999999999999999999"])
def test_job_ids_that_are_not_ids_are_404(scientist, api_for, pk):
    assert api_for(scientist).get(f"/api/jobs/{pk}/").status_code == 404
    assert api_for(scientist).post(f"/api/jobs/{pk}/cancel/").status_code == 404
