"""Pages of the Kubernetes backend: inventory review, connection check, Kueue objects and Workload status."""

from functools import wraps

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from quotas import roles
from scheduling.backends.base import ClusterUnreachable
from scheduling.kube import selectors, services


def readers_only(view):
    """Admins and managers read these pages; scientists have no business with the cluster's inventory."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        roles.require(request.user, "read_kubernetes")
        return view(request, *args, **kwargs)

    return wrapped


def admins_only(view):
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        roles.require(request.user, "change_kubernetes")
        return view(request, *args, **kwargs)

    return wrapped


def _error_text(exc: ValidationError) -> str:
    return " ".join(exc.messages)


@require_GET
@readers_only
def inventory(request):
    return render(
        request,
        "kube/inventory.html",
        {
            "snapshot": selectors.latest_reading(),
            "latest": selectors.latest_snapshot(),
            "history": selectors.recent_snapshots(),
            "connection": selectors.connection_summary(),
        },
    )


@require_POST
@admins_only
def inventory_read(request):
    snapshot = services.inventory_sync()
    if snapshot.error:
        messages.error(request, f"Could not read the cluster: {snapshot.error}")
    elif snapshot.changes:
        messages.warning(request, f"The cluster differs from the configured inventory in {len(snapshot.changes)} ways.")
    else:
        messages.success(request, "The cluster matches the configured inventory.")
    return redirect("kube:inventory")


@require_POST
@admins_only
def inventory_apply(request, pk):
    try:
        snapshot = services.inventory_apply(snapshot_id=pk, user=request.user)
    except ValidationError as exc:
        messages.error(request, _error_text(exc))
    else:
        messages.success(request, f"Applied {len(snapshot.changes)} changes to the configured inventory.")
    return redirect("kube:inventory")


@require_GET
@readers_only
def check(request):
    try:
        checks = services.kubernetes_backend().check()
    except ClusterUnreachable as exc:  # no configuration at all
        checks = [{"name": "Configuration", "ok": False, "detail": str(exc)}]
    return render(request, "kube/check.html", {"checks": checks, "connection": selectors.connection_summary()})


@require_GET
@readers_only
def kueue(request):
    try:
        objects, error = services.kueue_objects(), ""
    except ImportError:
        objects, error = [], "quotas.kueue is not available in this installation"
    except ValidationError as exc:
        objects, error = [], _error_text(exc)
    return render(
        request,
        "kube/kueue.html",
        {"objects": objects, "error": error, "connection": selectors.connection_summary()},
    )


@require_POST
@admins_only
def kueue_apply(request):
    try:
        results = services.kueue_apply(user=request.user)
    except (ClusterUnreachable, ImportError) as exc:
        messages.error(request, f"Kueue objects not applied: {exc}")
    else:
        done = {}
        for _kind, _name, outcome in results:
            done[outcome] = done.get(outcome, 0) + 1
        messages.success(request, "Kueue objects: " + ", ".join(f"{n} {k}" for k, n in sorted(done.items())))
    return redirect("kube:kueue")


@require_GET
def workloads(request):
    return render(request, "kube/workloads.html", {"statuses": selectors.workload_statuses_for(request.user)})
