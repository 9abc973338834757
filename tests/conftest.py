"""Fixtures every test may use: one user per role, two teams, and a small cluster."""

import pytest

from quotas.models import ComputeAllocation, InstanceType, NodeGroup, Role, Team, User

PASSWORD = "test-pass-123!"


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Fixtures create several users per test; PBKDF2 would make each test take seconds."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_cache(settings):
    """Each test starts with an empty, private cache (production shares one through Redis)."""
    from django.core.cache import cache

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    cache.clear()
    yield
    cache.clear()


def make_user(username, role, teams=()):
    user = User.objects.create_user(username=username, password=PASSWORD, role=role)
    for team in teams:
        team.members.add(user)
    return user


@pytest.fixture
def p5(db):
    it = InstanceType.objects.create(
        name="ml.p5.48xlarge",
        family="p5",
        accelerator_kind="NVIDIA H100",
        accelerator_resource="gpu",
        accelerators=8,
        vcpus=192,
        memory_gib=2048,
        efa_interfaces=32,
    )
    NodeGroup.objects.create(name="p5-nodes", instance_type=it, node_count=2)
    return it


@pytest.fixture
def team_a(db, p5):
    team = Team.objects.create(name="team-a", namespace="hyperpod-ns-team-a")
    ComputeAllocation.objects.create(team=team, instance_type=p5, accelerators=8)
    return team


@pytest.fixture
def team_b(db, p5):
    team = Team.objects.create(name="team-b", namespace="hyperpod-ns-team-b")
    ComputeAllocation.objects.create(team=team, instance_type=p5, accelerators=4)
    return team


@pytest.fixture
def admin_user(db):
    return make_user("ada", Role.ADMIN)


@pytest.fixture
def manager_user(db):
    return make_user("maya", Role.MANAGER)


@pytest.fixture
def scientist(db, team_a):
    return make_user("sam", Role.SCIENTIST, [team_a])


@pytest.fixture
def other_scientist(db, team_b):
    return make_user("olga", Role.SCIENTIST, [team_b])


@pytest.fixture
def users(admin_user, manager_user, scientist, other_scientist):
    """Every role: the table that per-role view tests iterate over."""
    return {"admin": admin_user, "manager": manager_user, "scientist": scientist, "other": other_scientist}


@pytest.fixture
def client_for(client):
    """client_for(user) -> a test client logged in as that user (None: anonymous)."""
    from django.test import Client

    def make(user):
        c = Client()
        if user is not None:
            c.force_login(user)
        return c

    return make


@pytest.fixture
def api_for():
    """api_for(user) -> a DRF APIClient authenticated as that user (None: anonymous)."""
    from rest_framework.test import APIClient

    def make(user):
        c = APIClient()
        if user is not None:
            c.force_authenticate(user)
        return c

    return make
