"""Every change is a version with a readable diff; revert restores and is itself a version."""

import pytest
from django.core.exceptions import ValidationError

from quotas import services
from quotas.models import ClusterPolicy, ComputeAllocation, ConfigVersion, Team


def test_allocation_change_reads_like_the_issue(team_a, p5, admin_user):
    version = services.allocations_update(
        team=team_a, allocations={p5: {"accelerators": 16, "memory_gib": 1024}}, user=admin_user, reason="new project"
    )
    assert version.changes == ["ml.p5.48xlarge GPUs: 8 → 16; memory: default (2048) → 1024 GiB"]
    assert version.author == admin_user and version.reason == "new project"
    # The state before the first recorded change was kept, so it can be restored.
    assert list(ConfigVersion.objects.filter(team=team_a).values_list("number", flat=True).order_by("number")) == [1, 2]


def test_no_change_no_version(team_a, p5, admin_user):
    assert services.allocations_update(team=team_a, allocations={p5: {"accelerators": 8}}, user=admin_user) is None
    assert services.team_update(team=team_a, user=admin_user, fair_share_weight=1.0) is None
    assert not ConfigVersion.objects.exists()


def test_team_policy_and_members_diff(team_a, admin_user, scientist, other_scientist):
    version = services.team_update(
        team=team_a,
        user=admin_user,
        members=[scientist, other_scientist],
        fair_share_weight=2,
        sharing="DontLend",
        borrow_limit_pct=50,
    )
    assert "fair-share weight: 1 → 2" in version.changes
    assert "sharing: Lend and borrow → Don't lend, don't borrow" in version.changes
    assert "borrow limit: no cap → 50 %" in version.changes
    assert "members: +olga" in version.changes


def test_revert_restores_and_is_a_new_version(team_a, p5, admin_user):
    services.allocations_update(team=team_a, allocations={p5: {"instances": 2}}, user=admin_user)
    services.team_update(team=team_a, user=admin_user, fair_share_weight=7)
    original = ConfigVersion.objects.get(team=team_a, number=1)
    new = services.version_revert(version=original, user=admin_user, reason="oops")
    assert new.number == 4 and new.reverted_from == original
    assert new.reason == "revert to version 1: oops"
    team_a.refresh_from_db()
    assert team_a.fair_share_weight == 1.0
    alloc = ComputeAllocation.objects.get(team=team_a)
    assert (alloc.instances, alloc.accelerators) == (None, 8)
    assert "ml.p5.48xlarge instances: 2 → —; GPUs: from instances → 8" in new.changes


def test_removed_allocation_is_versioned_and_revertable(team_a, p5, admin_user):
    v = services.allocations_update(team=team_a, allocations={p5: None}, user=admin_user)
    assert v.changes == ["ml.p5.48xlarge: removed (was GPUs 8)"]
    services.version_revert(version=ConfigVersion.objects.get(team=team_a, number=1), user=admin_user)
    assert ComputeAllocation.objects.get(team=team_a).accelerators == 8


def test_cluster_policy_versions(admin_user):
    v = services.cluster_policy_update(user=admin_user, task_prioritization="task-ranking", reason="priorities")
    assert v.changes == ["task prioritization: First come, first served → Task ranking (priority, then submit time)"]
    services.version_revert(version=ConfigVersion.objects.get(scope="cluster", number=1), user=admin_user)
    assert ClusterPolicy.load().task_prioritization == "fcfs"


def test_created_team_starts_its_history(admin_user, p5, scientist):
    team = services.team_create(
        user=admin_user,
        name="nlp",
        namespace="hyperpod-ns-nlp",
        members=["sam"],
        allocations={"ml.p5.48xlarge": {"accelerators": 2}},
    )
    v = ConfigVersion.objects.get(team=team)
    assert v.changes == ["created"]
    assert v.snapshot["allocations"]["ml.p5.48xlarge"]["resolved"] == {"gpu": 2.0, "cpu": 48.0, "memory": 512.0}
    assert v.snapshot["members"] == ["sam"]


@pytest.mark.parametrize(
    ("amounts", "field"),
    [
        ({"accelerators": -1}, "accelerators"),
        ({"accelerators": 1.5}, "accelerators"),
        ({"accelerators": "many"}, "accelerators"),
        ({"vcpus": -4}, "vcpus"),
        ({"memory_gib": float("nan")}, "memory_gib"),
        ({"instances": 1, "accelerators": 2}, "instances"),
    ],
)
def test_bad_allocation_saves_nothing(team_a, p5, admin_user, amounts, field):
    with pytest.raises(ValidationError) as exc:
        services.allocations_update(team=team_a, allocations={p5: amounts}, user=admin_user)
    assert "ml.p5.48xlarge" in exc.value.message_dict
    assert ComputeAllocation.objects.get(team=team_a).accelerators == 8
    assert not ConfigVersion.objects.exists()


def test_unknown_instance_type(team_a, admin_user):
    with pytest.raises(ValidationError) as exc:
        services.allocations_update(team=team_a, allocations={"ml.nope": {"accelerators": 1}}, user=admin_user)
    assert "unknown instance type" in str(exc.value)


def test_half_a_multi_type_change_is_not_saved(team_a, p5, admin_user):
    from quotas.models import InstanceType

    g5 = InstanceType.objects.create(
        name="ml.g5.2xlarge", accelerator_resource="gpu", accelerators=1, vcpus=8, memory_gib=32
    )
    with pytest.raises(ValidationError):
        services.allocations_update(
            team=team_a, allocations={p5: {"accelerators": 16}, g5: {"accelerators": -2}}, user=admin_user
        )
    assert ComputeAllocation.objects.get(team=team_a, instance_type=p5).accelerators == 8


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"fair_share_weight": -1}, "fair_share_weight"),
        ({"borrow_limit_pct": -5}, "borrow_limit_pct"),
        ({"namespace": "Not_A_Namespace"}, "namespace"),
        ({"namespace": "hyperpod-ns-team-b"}, "namespace"),
        ({"name": "team-b"}, "name"),
        ({"sharing": "Sometimes"}, "sharing"),
    ],
)
def test_bad_team_policy_saves_nothing(team_a, team_b, admin_user, fields, field):
    with pytest.raises(ValidationError) as exc:
        services.team_update(team=team_a, user=admin_user, **fields)
    assert field in exc.value.message_dict
    assert Team.objects.get(pk=team_a.pk).namespace == "hyperpod-ns-team-a"
    assert not ConfigVersion.objects.exists()
