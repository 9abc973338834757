"""Unknown fields in a JSON write are a 400 that names them, on every write of the API (one mechanism:
portal.api.RejectUnknownFields), and nothing changes."""

import pytest

from quotas.models import ClusterPolicy, ComputeAllocation, NodeGroup, PriorityClass

pytestmark = pytest.mark.django_db


@pytest.fixture
def writes(team_a, p5, scientist):
    ClusterPolicy.load()
    pc = PriorityClass.objects.create(name="training", weight=100)
    group = NodeGroup.objects.get()
    alloc = ComputeAllocation.objects.get(team=team_a)
    return [
        ("post", "/api/instance-types/", {"name": "ml.x", "vcpus": 8, "memory_gib": 32}),
        ("patch", f"/api/instance-types/{p5.pk}/", {"vcpus": 8}),
        ("post", "/api/node-groups/", {"name": "g", "instance_type": p5.name, "node_count": 1}),
        ("patch", f"/api/node-groups/{group.pk}/", {"node_count": 1}),
        ("post", "/api/priority-classes/", {"name": "x", "weight": 1}),
        ("patch", f"/api/priority-classes/{pc.pk}/", {"weight": 5}),
        ("post", "/api/teams/", {"name": "t", "namespace": "t"}),
        ("patch", f"/api/teams/{team_a.pk}/", {"fair_share_weight": 2}),
        ("put", f"/api/teams/{team_a.pk}/allocations/", {"allocations": {p5.name: {"accelerators": 1}}}),
        ("post", f"/api/teams/{team_a.pk}/revert/", {"version": 1}),
        ("patch", f"/api/allocations/{alloc.pk}/", {"accelerators": 2}),
        ("patch", "/api/cluster-policy/current/", {"idle_compute": "fcfs"}),
        ("post", "/api/cluster-policy/revert/", {"version": 1}),
        ("post", "/api/alert-rules/", {"team": team_a.name, "kind": "pending-too-long", "minutes": 5}),
        ("post", "/api/jobs/", {"team": team_a.name, "name": "j", "image": "pytorch:2", "accelerators": 1}),
        ("post", "/api/whatif/replays/", {"window_days": 7}),
        (
            "post",
            "/api/quota-requests/",
            {"team": team_a.name, "instance_type": p5.name, "accelerators": 16, "start_on": "2030-01-01", "why": "x"},
        ),
    ]


def test_every_write_refuses_unknown_fields(writes, admin_user, api_for):
    api = api_for(admin_user)
    for method, url, body in writes:
        response = getattr(api, method)(url, {**body, "node_cuont": 7}, format="json")
        assert response.status_code == 400, (method, url, response.content)
        assert response.json().get("node_cuont") == ["unknown field"], (url, response.json())


def test_nested_unknown_fields_and_read_only_fields(team_a, p5, admin_user, api_for):
    api = api_for(admin_user)
    nested = {"allocations": {p5.name: {"accelerators": 1, "gpus": 4}}}
    response = api.put(f"/api/teams/{team_a.pk}/allocations/", nested, format="json")
    assert response.status_code == 400 and "gpus" in str(response.json())
    response = api.patch(f"/api/instance-types/{p5.pk}/", {"nodes": 99}, format="json")
    assert response.status_code == 400 and response.json() == {"nodes": ["this field is read-only"]}
    assert ComputeAllocation.objects.get(team=team_a).accelerators == 8
