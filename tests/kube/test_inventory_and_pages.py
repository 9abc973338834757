"""Inventory readings, their review and application, the pages for every role, the command and the task."""

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from quotas.models import InstanceType, NodeGroup
from scheduling.kube import services
from scheduling.kube.models import InventorySnapshot, SnapshotStatus, WorkloadStatus
from scheduling.models import Job
from tests.kube.test_through_the_loop import KUBECONFIG


@pytest.fixture
def wired(apiserver, settings, tmp_path):
    """CLUSTER_BACKEND=kubernetes through a kubeconfig pointing at the fake API server, with some nodes."""
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(url=apiserver.url))
    settings.CLUSTER_BACKEND = "kubernetes"
    settings.KUBECONFIG = str(path)
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 1.0
    settings.KUBE_WATCH_SECONDS = 0.2
    for i in range(3):
        apiserver.add_node(f"p5-{i}", "ml.p5.48xlarge", gpus=8, labels={"eks.amazonaws.com/nodegroup": "p5-nodes"})
    for i in range(2):
        apiserver.add_node(f"trn-{i}", "ml.trn1.32xlarge", neuron=16, cpu="128", memory="536870912Ki")
    apiserver.add_node("unlabelled", None, cpu="4", memory="16Gi")
    return apiserver


def test_a_reading_stores_differences_and_changes_nothing(wired, p5):
    snapshot = services.inventory_sync()

    assert snapshot.status == SnapshotStatus.PENDING and not snapshot.error
    changes = {(c["kind"], c["action"], c["name"]): c["fields"] for c in snapshot.changes}
    assert changes == {
        ("instance_type", "add", "ml.trn1.32xlarge"): {
            "accelerator_resource": [None, "neuron"],
            "accelerators": [None, 16],
            "vcpus": [None, 128],
            "memory_gib": [None, 512],
        },
        ("node_group", "change", "p5-nodes"): {"node_count": [2, 3]},
        ("node_group", "add", "ml.trn1.32xlarge"): {"node_count": [None, 2]},
    }
    assert any("unlabelled" in w for w in snapshot.warnings)
    assert NodeGroup.objects.get(name="p5-nodes").node_count == 2  # never applied silently
    assert not InstanceType.objects.filter(name="ml.trn1.32xlarge").exists()

    again = services.inventory_sync()
    assert again.pk == snapshot.pk  # the same reading is refreshed, not piled up


def test_applying_makes_the_configured_inventory_match_in_one_transaction(wired, p5, admin_user):
    snapshot = services.inventory_sync()
    services.inventory_apply(snapshot_id=snapshot.pk, user=admin_user)

    assert NodeGroup.objects.get(name="p5-nodes").node_count == 3
    trn = InstanceType.objects.get(name="ml.trn1.32xlarge")
    assert (trn.family, trn.accelerator_resource, trn.accelerators, trn.vcpus) == ("trn1", "neuron", 16, 128)
    assert NodeGroup.objects.get(name="ml.trn1.32xlarge").instance_type == trn
    snapshot.refresh_from_db()
    assert snapshot.status == SnapshotStatus.APPLIED and snapshot.applied_by == admin_user
    assert services.inventory_sync().status == SnapshotStatus.UNCHANGED
    with pytest.raises(ValidationError, match="cannot be applied"):
        services.inventory_apply(snapshot_id=snapshot.pk, user=admin_user)


def test_a_stale_reading_is_refused_and_nothing_is_half_applied(wired, p5, admin_user):
    snapshot = services.inventory_sync()
    NodeGroup.objects.filter(name="p5-nodes").update(node_count=5)  # someone edited meanwhile
    with pytest.raises(ValidationError, match="changed since this reading"):
        services.inventory_apply(snapshot_id=snapshot.pk, user=admin_user)
    assert not InstanceType.objects.filter(name="ml.trn1.32xlarge").exists()


def test_only_admins_apply(wired, p5, manager_user):
    snapshot = services.inventory_sync()
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        services.inventory_apply(snapshot_id=snapshot.pk, user=manager_user)


def test_a_failed_reading_is_recorded_with_its_error(wired, p5):
    wired.stop()
    snapshot = services.inventory_sync()
    assert snapshot.status == SnapshotStatus.FAILED and "cannot reach" in snapshot.error


def test_the_beat_task_reads_only_with_the_kubernetes_backend(wired, p5, settings):
    from scheduling.kube.tasks import inventory_sync

    assert inventory_sync.delay().get()["status"] == "pending"
    settings.CLUSTER_BACKEND = "simulated"
    assert "skipped" in inventory_sync.delay().get()


PAGES = ["kube:inventory", "kube:check", "kube:kueue"]
EXPECTED = {"admin": 200, "manager": 200, "scientist": 403, "other": 403}


@pytest.mark.parametrize("name", PAGES)
def test_pages_for_every_role(wired, users, client_for, name):
    services.inventory_sync()
    assert client_for(None).get(reverse(name)).status_code == 302  # to the login page
    for role, user in users.items():
        assert client_for(user).get(reverse(name)).status_code == EXPECTED[role], role


def test_inventory_page_shows_the_differences_and_admins_apply_them(wired, users, client_for):
    snapshot = services.inventory_sync()
    page = client_for(users["admin"]).get(reverse("kube:inventory")).content.decode()
    assert "ml.trn1.32xlarge" in page and 'data-testid="apply"' in page
    manager_page = client_for(users["manager"]).get(reverse("kube:inventory")).content.decode()
    assert "ml.trn1.32xlarge" in manager_page and 'data-testid="apply"' not in manager_page

    url = reverse("kube:inventory-apply", args=[snapshot.pk])
    for role in ("manager", "scientist", "other"):
        assert client_for(users[role]).post(url).status_code == 403
    assert NodeGroup.objects.get(name="p5-nodes").node_count == 2
    response = client_for(users["admin"]).post(url, follow=True)
    assert "Applied 3 changes" in response.content.decode()
    assert NodeGroup.objects.get(name="p5-nodes").node_count == 3
    stale = client_for(users["admin"]).post(url, follow=True).content.decode()
    assert "cannot be applied" in stale  # a message, not a 500


def test_read_now_is_admin_only_and_reports_an_unreachable_cluster(wired, users, client_for):
    assert client_for(users["manager"]).post(reverse("kube:inventory-read")).status_code == 403
    wired.stop()
    page = client_for(users["admin"]).post(reverse("kube:inventory-read"), follow=True).content.decode()
    assert "Could not read the cluster" in page


def test_check_page_lists_the_checks(wired, users, client_for):
    wired.denied.add(("", "nodes", "list"))
    page = client_for(users["admin"]).get(reverse("kube:check")).content.decode()
    assert "RBAC nodes" in page and "missing: list" in page


def test_check_page_without_configuration(settings, users, client_for, tmp_path):
    settings.CLUSTER_BACKEND = "kubernetes"
    settings.KUBECONFIG = str(tmp_path / "missing")
    page = client_for(users["admin"]).get(reverse("kube:check")).content.decode()
    assert "does not exist" in page


def test_workloads_page_shows_only_visible_jobs(users, client_for, team_a, team_b):
    mine = Job.objects.create(team=team_a, submitted_by=users["scientist"], name="mine", image="x")
    theirs = Job.objects.create(team=team_b, submitted_by=users["other"], name="theirs", image="x")
    for job, reason in ((mine, "waiting in Kueue: mine-reason"), (theirs, "waiting in Kueue: their-reason")):
        WorkloadStatus.objects.create(job=job, workload=f"w-{job.pk}", local_queue="q", position=1, reason=reason)
    page = client_for(users["scientist"]).get(reverse("kube:workloads")).content.decode()
    assert "mine-reason" in page and "their-reason" not in page
    page = client_for(users["manager"]).get(reverse("kube:workloads")).content.decode()
    assert "mine-reason" in page and "their-reason" in page


def test_workload_status_sync_stores_kueue_reasons(wired, team_a, scientist, settings):
    settings.KUBE_ADMISSION_MODE = "kueue"
    job = Job.objects.create(team=team_a, submitted_by=scientist, name="kq", accelerators=8, image="x")
    from scheduling.kube import manifests

    wired.add_namespace("hyperpod-ns-team-a")
    wired.add_workload(
        "hyperpod-ns-team-a",
        manifests.job_name(job),
        queue="hyperpod-ns-team-a-localqueue",
        conditions=[{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "8 more needed"}],
    )
    assert services.workload_status_sync() == 1
    status = WorkloadStatus.objects.get(job=job)
    assert (status.position, status.reason) == (1, "waiting in Kueue: 8 more needed")


def test_command_check_and_inventory(wired, p5, admin_user, capsys):
    call_command("kube", "check")
    assert "ok   API server" in capsys.readouterr().out
    call_command("kube", "inventory")
    out = capsys.readouterr().out
    assert "p5-nodes: 3 x ml.p5.48xlarge" in out and "add instance_type ml.trn1.32xlarge" in out
    with pytest.raises(CommandError, match="--admin"):
        call_command("kube", "inventory", "--apply")
    call_command("kube", "inventory", "--apply", "--admin", admin_user.username)
    assert NodeGroup.objects.get(name="p5-nodes").node_count == 3
    assert InventorySnapshot.objects.filter(status=SnapshotStatus.APPLIED).count() == 1


def test_command_fails_with_one_line_when_unreachable(wired, p5):
    wired.stop()
    with pytest.raises(CommandError, match="cannot reach"):
        call_command("kube", "inventory")
    with pytest.raises(CommandError, match="API server"):
        call_command("kube", "check")
