"""The quotas API: same visibility as the pages, admins write, validation errors are 400s with reasons."""

import pytest

from quotas.models import ClusterPolicy, ComputeAllocation, ConfigVersion, Team

ROLES = ["anonymous", "other", "scientist", "manager", "admin"]


def _user(users, role):
    return None if role == "anonymous" else users[role]


READ_ALL = {"anonymous": 401, "other": 200, "scientist": 200, "manager": 200, "admin": 200}
TEAM_READ = {"anonymous": 401, "other": 404, "scientist": 200, "manager": 200, "admin": 200}

GET_CASES = [
    ("/api/instance-types/", READ_ALL),
    ("/api/node-groups/", READ_ALL),
    ("/api/priority-classes/", READ_ALL),
    ("/api/cluster-policy/", READ_ALL),
    ("/api/cluster-policy/history/", READ_ALL),
    ("/api/teams/", READ_ALL),
    ("/api/allocations/", READ_ALL),
    ("/api/teams/{team}/", TEAM_READ),
    ("/api/teams/{team}/status/", TEAM_READ),
    ("/api/teams/{team}/history/", TEAM_READ),
    ("/api/teams/{team}/allocations/", TEAM_READ),
    ("/api/allocations/{alloc}/", TEAM_READ),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("url", "expected"), GET_CASES, ids=[c[0] for c in GET_CASES])
def test_reads_for_every_role(api_for, users, team_a, url, expected, role):
    url = url.format(team=team_a.pk, alloc=team_a.allocations.get().pk)
    response = api_for(_user(users, role)).get(url)
    assert response.status_code == expected[role], response.content


def test_scientists_list_only_their_teams(api_for, users, team_a, team_b):
    names = [t["name"] for t in api_for(users["scientist"]).get("/api/teams/").json()["results"]]
    assert names == ["team-a"]
    allocs = api_for(users["scientist"]).get("/api/allocations/").json()["results"]
    assert {a["team"] for a in allocs} == {"team-a"}
    assert len(api_for(users["manager"]).get("/api/teams/").json()["results"]) == 2


WRITE_CASES = [
    # method, url, body, status for a scientist of another team (404 where the object is another team's)
    ("post", "/api/teams/", {"name": "nlp", "namespace": "hyperpod-ns-nlp", "members": ["sam"]}, 403),
    ("patch", "/api/teams/{team}/", {"fair_share_weight": 3, "reason": "more work"}, 404),
    ("put", "/api/teams/{team}/allocations/", {"allocations": {"ml.p5.48xlarge": {"accelerators": 16}}}, 404),
    ("patch", "/api/allocations/{alloc}/", {"memory_gib": 1024}, 404),
    ("patch", "/api/cluster-policy/current/", {"idle_compute": "fcfs"}, 403),
    ("post", "/api/priority-classes/", {"name": "urgent", "weight": 1000}, 403),
    ("patch", "/api/node-groups/{group}/", {"node_count": 4}, 403),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("method", "url", "body", "other"), WRITE_CASES, ids=[f"{c[0]} {c[1]}" for c in WRITE_CASES])
def test_only_admins_write(api_for, users, team_a, p5, method, url, body, other, role):
    url = url.format(team=team_a.pk, alloc=team_a.allocations.get().pk, group=p5.node_groups.get().pk)
    before = ConfigVersion.objects.count(), Team.objects.count()
    response = getattr(api_for(_user(users, role)), method)(url, body, format="json")
    expected = {"anonymous": 401, "other": other, "scientist": 403, "manager": 403}
    expected["admin"] = 201 if method == "post" else 200
    assert response.status_code == expected[role], response.content
    if role != "admin":
        assert (ConfigVersion.objects.count(), Team.objects.count()) == before


def test_allocation_through_the_api_is_versioned(api_for, admin_user, team_a, p5):
    alloc = team_a.allocations.get()
    response = api_for(admin_user).patch(
        f"/api/allocations/{alloc.pk}/", {"memory_gib": 1024, "reason": "OOM"}, format="json"
    )
    assert response.json()["resolved"] == {"gpu": 8.0, "cpu": 192.0, "memory": 1024.0}
    assert response.json()["sources"] == {
        "instances": "default",
        "accelerators": "set",
        "vcpus": "default",
        "memory_gib": "set",
    }
    version = ConfigVersion.objects.filter(team=team_a).latest("number")
    assert version.changes == ["ml.p5.48xlarge memory: default (2048) → 1024 GiB"]
    assert version.reason == "OOM"


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        (
            "put",
            "/api/teams/{team}/allocations/",
            {"allocations": {"ml.p5.48xlarge": {"accelerators": -1}}},
            "allocations",
        ),
        (
            "put",
            "/api/teams/{team}/allocations/",
            {"allocations": {"ml.p5.48xlarge": {"accelerators": 1.5}}},
            "allocations",
        ),
        (
            "put",
            "/api/teams/{team}/allocations/",
            {"allocations": {"ml.p5.48xlarge": {"accelerators": "x"}}},
            "allocations",
        ),
        ("put", "/api/teams/{team}/allocations/", {"allocations": {"ml.nope": {"accelerators": 1}}}, "instance_type"),
        (
            "post",
            "/api/allocations/",
            {"team": "team-b", "instance_type": "ml.nope", "accelerators": 1},
            "instance_type",
        ),
        ("patch", "/api/teams/{team}/", {"fair_share_weight": -1}, "fair_share_weight"),
        ("patch", "/api/teams/{team}/", {"borrow_limit_pct": -10}, "borrow_limit_pct"),
        ("patch", "/api/teams/{team}/", {"namespace": "Bad_Name"}, "namespace"),
        ("patch", "/api/teams/{team}/", {"namespace": "hyperpod-ns-team-b"}, "namespace"),
        ("post", "/api/teams/", {"name": "team-b", "namespace": "ns-new"}, "name"),
        ("patch", "/api/cluster-policy/current/", {"idle_compute": "sometimes"}, "idle_compute"),
    ],
)
def test_bad_input_is_a_400_with_a_reason(api_for, admin_user, team_a, team_b, method, url, body, field):
    before = (list(ComputeAllocation.objects.values_list("accelerators", flat=True)), Team.objects.count())
    response = getattr(api_for(admin_user), method)(url.format(team=team_a.pk), body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json() or field in str(response.json())
    assert (list(ComputeAllocation.objects.values_list("accelerators", flat=True)), Team.objects.count()) == before
    assert Team.objects.get(pk=team_a.pk).fair_share_weight == 1.0
    assert ClusterPolicy.load().idle_compute == "fair-share"


def test_history_and_revert(api_for, admin_user, team_a):
    api = api_for(admin_user)
    api.patch(f"/api/teams/{team_a.pk}/", {"fair_share_weight": 9}, format="json")
    history = api.get(f"/api/teams/{team_a.pk}/history/").json()
    assert [v["number"] for v in history] == [2, 1]
    assert history[0]["changes"] == ["fair-share weight: 1 → 9"]
    response = api.post(f"/api/teams/{team_a.pk}/revert/", {"version": 1}, format="json")
    assert response.json()["version"]["number"] == 3
    assert Team.objects.get(pk=team_a.pk).fair_share_weight == 1.0
    assert api.post(f"/api/teams/{team_a.pk}/revert/", {"version": 42}, format="json").status_code == 400


def test_team_status(api_for, manager_user, team_a):
    body = api_for(manager_user).get(f"/api/teams/{team_a.pk}/status/").json()
    assert body["quota"]["ml.p5.48xlarge"] == {"gpu": 8.0, "cpu": 192.0, "memory": 2048.0}
    assert set(body) == {"quota", "borrowing_limit", "usage", "borrowed", "lent", "fair_share", "pending"}


def test_openapi_schema_lists_the_quota_endpoints(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    paths = (
        response.json()["paths"] if response["Content-Type"].startswith("application/vnd.oai.openapi+json") else None
    )
    if paths is None:
        import yaml

        paths = yaml.safe_load(response.content)["paths"]
    for path in [
        "/api/instance-types/",
        "/api/node-groups/",
        "/api/teams/",
        "/api/teams/{id}/status/",
        "/api/teams/{id}/history/",
        "/api/teams/{id}/revert/",
        "/api/teams/{id}/allocations/",
        "/api/allocations/",
        "/api/cluster-policy/current/",
        "/api/priority-classes/",
    ]:
        assert path in paths, path


@pytest.mark.parametrize("key", ["ml.p5\x00.48xlarge", "\x00"])
def test_an_instance_type_key_with_a_nul_character_is_a_400_not_a_500(api_for, admin_user, team_a, key):
    response = api_for(admin_user).put(
        f"/api/teams/{team_a.pk}/allocations/", {"allocations": {key: {"accelerators": 1}}}, format="json"
    )
    assert response.status_code == 400
    assert "unknown instance type" in response.content.decode()
    assert team_a.allocations.get().accelerators == 8  # nothing changed
