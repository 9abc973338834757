"""Every write goes through the services and leaves a version: the Django admin is read-only for versioned
models, inventory changes (pages, API, quotas apply, the Kubernetes inventory) are versions of the inventory,
and alert rules keep an audit trail, deletions included."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from quotas import services
from quotas.models import ClusterPolicy, ComputeAllocation, ConfigVersion, InstanceType, NodeGroup
from scheduling.usage.models import AlertRule, AlertRuleChange

pytestmark = pytest.mark.django_db

VERSIONED = [
    ("quotas", "team"),
    ("quotas", "computeallocation"),
    ("quotas", "instancetype"),
    ("quotas", "nodegroup"),
    ("quotas", "priorityclass"),
    ("quotas", "clusterpolicy"),
    ("quotas", "configversion"),
]


@pytest.fixture
def superuser(admin_user):
    admin_user.is_staff = admin_user.is_superuser = True
    admin_user.save()
    return admin_user


def inventory_versions():
    return list(ConfigVersion.objects.filter(scope="inventory").order_by("number"))


@pytest.mark.parametrize("app, model", VERSIONED)
def test_django_admin_is_read_only_for_versioned_models(superuser, client_for, team_a, app, model):
    client = client_for(superuser)
    ClusterPolicy.load()
    assert client.get(f"/django-admin/{app}/{model}/").status_code == 200
    assert client.get(f"/django-admin/{app}/{model}/add/").status_code == 403
    before = ConfigVersion.objects.count()
    obj = {
        "team": team_a,
        "computeallocation": ComputeAllocation.objects.first(),
        "instancetype": InstanceType.objects.first(),
        "nodegroup": NodeGroup.objects.first(),
        "clusterpolicy": ClusterPolicy.load(),
    }.get(model)
    if obj is not None:
        response = client.post(f"/django-admin/{app}/{model}/{obj.pk}/change/", {"name": "changed", "node_count": 99})
        assert response.status_code in (200, 403)  # a read-only view, nothing saved
        assert client.post(f"/django-admin/{app}/{model}/{obj.pk}/delete/", {"post": "yes"}).status_code == 403
        assert type(obj).objects.filter(pk=obj.pk).exists()
    assert NodeGroup.objects.get().node_count == 2
    assert ConfigVersion.objects.count() == before


def test_users_and_roles_stay_editable_in_the_admin(superuser, client_for):
    assert client_for(superuser).get("/django-admin/quotas/user/add/").status_code == 200


def test_inventory_pages_and_api_leave_a_version(admin_user, client_for, api_for, p5):
    api_for(admin_user).patch(f"/api/node-groups/{NodeGroup.objects.get().pk}/", {"node_count": 4}, format="json")
    client_for(admin_user).post(
        reverse("quotas:priority-class-create"), {"name": "urgent", "weight": 1000, "description": ""}
    )
    versions = inventory_versions()
    assert [v.changes for v in versions[-2:]] == [
        ["~ node group p5-nodes: node_count 2 → 4"],
        ["+ priority class urgent (weight 1000)"],
    ]
    assert all(v.author == admin_user for v in versions[-2:])
    page = client_for(admin_user).get(reverse("quotas:cluster")).content.decode()
    assert "node_count 2 → 4" in page


def test_a_refused_inventory_change_leaves_no_version(admin_user, p5):
    with pytest.raises(ValidationError):
        services.node_group_save(node_group=NodeGroup.objects.get(), user=admin_user, node_count=10**9)
    assert inventory_versions() == []
    assert NodeGroup.objects.get().node_count == 2


def test_quotas_apply_is_one_inventory_version(admin_user, p5, tmp_path):
    from quotas import iac

    iac.apply(
        "node_groups:\n- {name: p5-nodes, instance_type: ml.p5.48xlarge, node_count: 3}\n"
        "- {name: p5-more, instance_type: ml.p5.48xlarge, node_count: 1}\n",
        user=admin_user,
    )
    first, version = inventory_versions()
    assert first.changes == ["state before history was recorded"]
    assert version.changes == [
        "+ node group p5-more (instance_type ml.p5.48xlarge, node_count 1)",
        "~ node group p5-nodes: node_count 2 → 3",
    ]
    assert version.reason == "applied from cluster.yaml"


def test_kubernetes_inventory_apply_leaves_a_version(admin_user, p5):
    from scheduling.kube.inventory import inventory_changes
    from scheduling.kube.models import InventorySnapshot, SnapshotStatus
    from scheduling.kube.services import configured_inventory, inventory_apply

    types, groups = configured_inventory()
    items = [
        {
            "instance_type": "ml.p5.48xlarge",
            "node_count": 5,
            "accelerator_resource": "gpu",
            "accelerators": 8,
            "vcpus": 192,
            "memory_gib": 2048,
        }
    ]
    changes = inventory_changes(items, types, groups)
    snapshot = InventorySnapshot.objects.create(
        source="test", items=items, changes=changes, status=SnapshotStatus.PENDING
    )
    inventory_apply(snapshot_id=snapshot.pk, user=admin_user)
    version = inventory_versions()[-1]
    assert "reading #" in version.reason
    assert version.changes == ["~ node group p5-nodes: node_count 2 → 5"]


def test_inventory_versions_cannot_be_reverted(admin_user, p5):
    services.priority_class_save(user=admin_user, name="urgent", weight=5)
    version = inventory_versions()[-1]
    with pytest.raises(Exception, match="record"):
        services.version_revert(version=version, user=admin_user)


def test_alert_rule_create_change_delete_leave_records(admin_user, client_for, api_for, team_a):
    api = api_for(admin_user)
    body = {"team": team_a.name, "kind": "pending_too_long", "minutes": 5, "emails": "ops@example.com"}
    rule_id = api.post("/api/alert-rules/", body, format="json").json()["id"]
    api.patch(f"/api/alert-rules/{rule_id}/", {"minutes": 10}, format="json")
    client_for(admin_user).post(reverse("usage:alert-rule-delete", args=[rule_id]))
    assert not AlertRule.objects.exists()
    changes = list(AlertRuleChange.objects.order_by("at", "id"))
    assert [c.action for c in changes] == ["created", "changed", "deleted"]
    assert all(c.by == admin_user for c in changes)
    assert "10 min" in changes[-1].description and changes[-1].rule is None
    page = client_for(admin_user).get(reverse("usage:alerts")).content.decode()
    assert "Deleted: team-a" in page
