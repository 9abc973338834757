"""Every quota page for every role, from one table: anonymous, scientist of another team, scientist of
the team, manager, admin."""

import pytest
from django.urls import reverse

ROLES = ["anonymous", "other", "scientist", "manager", "admin"]

# url name, needs the team's pk, expected status per role (302 = to the login page)
READ_ALL = {"anonymous": 302, "other": 200, "scientist": 200, "manager": 200, "admin": 200}
TEAM_READ = {"anonymous": 302, "other": 404, "scientist": 200, "manager": 200, "admin": 200}
TEAM_WRITE = {"anonymous": 302, "other": 404, "scientist": 403, "manager": 403, "admin": 200}
ADMIN_ONLY = {"anonymous": 302, "other": 403, "scientist": 403, "manager": 403, "admin": 200}
READERS = {"anonymous": 302, "other": 403, "scientist": 403, "manager": 200, "admin": 200}

GET_CASES = [
    ("quotas:cluster", None, READ_ALL),
    ("quotas:team-list", None, READ_ALL),
    ("quotas:policy", None, READ_ALL),
    ("quotas:team-detail", "team", TEAM_READ),
    ("quotas:team-history", "team", TEAM_READ),
    ("quotas:team-edit", "team", TEAM_WRITE),
    ("quotas:allocations", "team", TEAM_WRITE),
    ("quotas:team-create", None, ADMIN_ONLY),
    ("quotas:instance-type-create", None, ADMIN_ONLY),
    ("quotas:instance-type-edit", "type", ADMIN_ONLY),
    ("quotas:node-group-create", None, ADMIN_ONLY),
    ("quotas:node-group-edit", "group", ADMIN_ONLY),
    ("quotas:priority-class-create", None, ADMIN_ONLY),
    ("quotas:priority-class-edit", "priority", ADMIN_ONLY),
    ("quotas:kueue", None, READERS),
]


@pytest.fixture
def world(users, team_a, p5):
    from quotas.models import PriorityClass

    pc = PriorityClass.objects.create(name="training", weight=50)
    return {
        "team": team_a.pk,
        "type": p5.pk,
        "group": p5.node_groups.first().pk,
        "priority": pc.pk,
    }


def _user(users, role):
    return None if role == "anonymous" else users[role]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("name", "arg", "expected"), GET_CASES, ids=[c[0] for c in GET_CASES])
def test_get_for_every_role(client_for, users, world, name, arg, expected, role):
    url = reverse(name, args=[world[arg]] if arg else [])
    response = client_for(_user(users, role)).get(url)
    assert response.status_code == expected[role], (url, role)
    if expected[role] == 302:
        assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("role", ROLES)
def test_allocation_preview_for_every_role(client_for, users, world, role):
    url = reverse("quotas:allocation-preview", args=[world["team"]]) + f"?type={world['type']}"
    response = client_for(_user(users, role)).get(url, HTTP_HX_REQUEST="true")
    assert response.status_code == TEAM_WRITE[role]


POST_CASES = [
    # url name, arg, data, expected per role (admin: 302 back after success)
    (
        "quotas:team-edit",
        "team",
        {
            "name": "team-a",
            "namespace": "hyperpod-ns-team-a",
            "cohort": "default",
            "fair_share_weight": "3",
            "sharing": "Lend",
            "preempt_team_tasks": "Never",
        },
    ),
    ("quotas:allocations", "team", {"t{type}-accelerators": "4", "t{type}-accelerators_src": "set"}),
    ("quotas:policy", None, {"task_prioritization": "task-ranking", "idle_compute": "fcfs", "backfill": "none"}),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("name", "arg", "data"), POST_CASES, ids=[c[0] for c in POST_CASES])
def test_writes_only_for_admins(client_for, users, world, name, arg, data, role):
    from quotas.models import ClusterPolicy, ConfigVersion

    url = reverse(name, args=[world[arg]] if arg else [])
    data = {k.format(type=world["type"]): v for k, v in data.items()}
    before = ConfigVersion.objects.count()
    response = client_for(_user(users, role)).post(url, data)
    expected = {"anonymous": 302, "other": 404 if arg else 403, "scientist": 403, "manager": 403, "admin": 302}
    assert response.status_code == expected[role]
    changed = ConfigVersion.objects.count() > before
    assert changed == (role == "admin")
    if role != "admin":
        assert ClusterPolicy.load().task_prioritization == "fcfs"


@pytest.mark.parametrize("role", ROLES)
def test_revert_only_for_admins(client_for, users, world, team_a, admin_user, role):
    from quotas import services
    from quotas.models import ConfigVersion

    services.team_update(team=team_a, user=admin_user, fair_share_weight=5)
    first = ConfigVersion.objects.get(team=team_a, number=1)
    response = client_for(_user(users, role)).post(reverse("quotas:version-revert", args=[first.pk]))
    expected = {"anonymous": 302, "other": 404, "scientist": 403, "manager": 403, "admin": 302}
    assert response.status_code == expected[role]
    team_a.refresh_from_db()
    assert team_a.fair_share_weight == (1.0 if role == "admin" else 5.0)
