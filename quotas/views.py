"""Pages for the cluster's configuration. Everyone reads what Team.objects.visible_to lets them see; only
admins write (403 for others); another team's page is a 404. Writes go through quotas.services."""

from functools import wraps

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from portal.tables import configure
from quotas import history, roles, selectors, services
from quotas.allocation_editor import editor_rows, preview_fragments, preview_url, rows_from_post
from quotas.forms import (
    ClusterPolicyForm,
    InstanceTypeForm,
    NodeGroupForm,
    PriorityClassForm,
    ReasonForm,
    TeamForm,
    apply_service_errors,
)
from quotas.models import ClusterPolicy, ConfigVersion, InstanceType, NodeGroup, PriorityClass, Team
from quotas.tables import TeamTable


def admin_required(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        roles.require(request.user, "change_configuration")
        return view(request, *args, **kwargs)

    return wrapper


def reader_required(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        roles.require(request.user, "read_all_teams")
        return view(request, *args, **kwargs)

    return wrapper


def visible_team(request, pk) -> Team:
    return get_object_or_404(Team.objects.visible_to(request.user), pk=pk)


# --- cluster inventory --------------------------------------------------------------------------------


@require_GET
def cluster(request):
    return render(request, "quotas/cluster.html", selectors.cluster_inventory())


def _object_form(request, *, form_class, instance, save, title, back, delete_url=None):
    form = form_class(request.POST if request.method == "POST" else None, instance=instance)
    if request.method == "POST" and form.is_valid():
        try:
            obj = save(form)
        except ValidationError as exc:
            apply_service_errors(form, exc)
        else:
            messages.success(request, f"Saved {obj}.")
            return redirect(back)
    return render(
        request,
        "quotas/object_form.html",
        {"form": form, "title": title, "back": back, "delete_url": delete_url, "object": instance},
    )


def _object_delete(request, *, obj, delete, back):
    try:
        delete(obj)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Deleted {obj}.")
    return redirect(back)


def _fields(form):
    return {f: form.cleaned_data[f] for f in form.Meta.fields}


@require_http_methods(["GET", "POST"])
@admin_required
def instance_type_edit(request, pk=None):
    it = get_object_or_404(InstanceType, pk=pk) if pk else None
    return _object_form(
        request,
        form_class=InstanceTypeForm,
        instance=it,
        save=lambda form: services.instance_type_save(instance_type=it, user=request.user, **_fields(form)),
        title=f"Edit instance type {it}" if it else "New instance type",
        back=reverse("quotas:cluster"),
        delete_url=reverse("quotas:instance-type-delete", args=[pk]) if pk else None,
    )


@require_POST
@admin_required
def instance_type_delete(request, pk):
    it = get_object_or_404(InstanceType, pk=pk)
    return _object_delete(
        request, obj=it, delete=lambda o: services.instance_type_delete(instance_type=o), back="quotas:cluster"
    )


@require_http_methods(["GET", "POST"])
@admin_required
def node_group_edit(request, pk=None):
    ng = get_object_or_404(NodeGroup, pk=pk) if pk else None
    return _object_form(
        request,
        form_class=NodeGroupForm,
        instance=ng,
        save=lambda form: services.node_group_save(node_group=ng, user=request.user, **_fields(form)),
        title=f"Edit node group {ng.name}" if ng else "New node group",
        back=reverse("quotas:cluster"),
        delete_url=reverse("quotas:node-group-delete", args=[pk]) if pk else None,
    )


@require_POST
@admin_required
def node_group_delete(request, pk):
    ng = get_object_or_404(NodeGroup, pk=pk)
    return _object_delete(
        request, obj=ng, delete=lambda o: services.node_group_delete(node_group=o), back="quotas:cluster"
    )


# --- teams ------------------------------------------------------------------------------------------------


@require_GET
def team_list(request):
    actions = () if request.user.is_portal_admin else ("actions",)
    table = TeamTable(selectors.team_list(request.user), exclude=actions)
    table.empty_text = (
        "No teams yet." if request.user.sees_all_teams else "You are not in a team yet; ask an admin to add you."
    )
    return render(request, "quotas/team_list.html", {"table": configure(request, table)})


@require_GET
def team_detail(request, pk):
    team = visible_team(request, pk)
    standing = selectors.team_standing(team)
    allocations = team.allocations.select_related("instance_type")
    return render(
        request,
        "quotas/team_detail.html",
        {
            "team": team,
            "standing": standing,
            "standing_rows": selectors.standing_table(standing, []),
            "allocations": [_allocation_summary(a) for a in allocations],
            "members": team.members.order_by("username"),
            "versions": selectors.team_versions(team)[:5],
        },
    )


def _allocation_summary(alloc) -> dict:
    resolved = alloc.resolved()
    key = alloc.instance_type.accelerator_key
    return {
        "alloc": alloc,
        "given": history.describe(history.allocation_entry(alloc)),
        "accelerators": resolved.get(key) if key else None,
        "cpu": resolved.get("cpu", 0),
        "memory": resolved.get("memory", 0),
    }


@require_http_methods(["GET", "POST"])
def team_edit(request, pk=None):
    team = visible_team(request, pk) if pk else None
    if not request.user.is_portal_admin:
        raise PermissionDenied("only admins change teams")
    form = TeamForm(request.POST if request.method == "POST" else None, instance=team)
    if request.method == "POST" and form.is_valid():
        members = list(form.cleaned_data["members"])
        reason = form.cleaned_data["reason"]
        try:
            if team is None:
                team = services.team_create(user=request.user, members=members, reason=reason, **form.service_fields())
                messages.success(request, f"Created team {team.name}. Now give it an allocation.")
                return redirect("quotas:allocations", pk=team.pk)
            version = services.team_update(
                team=team, user=request.user, members=members, reason=reason, **form.service_fields()
            )
        except ValidationError as exc:
            apply_service_errors(form, exc)
        else:
            messages.success(request, f"Saved {team.name}: {version.summary}." if version else "Nothing changed.")
            return redirect("quotas:team-detail", pk=team.pk)
    return render(request, "quotas/team_form.html", {"form": form, "team": team})


@require_POST
def team_delete(request, pk):
    team = visible_team(request, pk)
    if not request.user.is_portal_admin:
        raise PermissionDenied("only admins delete teams")
    try:
        services.team_delete(team=team, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("quotas:team-detail", pk=team.pk)
    messages.success(request, f"Deleted team {team.name}.")
    return redirect("quotas:team-list")


# --- the allocation editor ----------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def allocations(request, pk):
    team = visible_team(request, pk)
    if not request.user.is_portal_admin:
        raise PermissionDenied("only admins change allocations")
    reason_form = ReasonForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        rows, forms_ok = rows_from_post(team, request.POST)
        if forms_ok and reason_form.is_valid():
            wanted = {row["form"].instance_type: row["form"].allocation() for row in rows}
            try:
                version = services.allocations_update(
                    team=team,
                    allocations=wanted,
                    user=request.user,
                    reason=reason_form.cleaned_data["reason"],
                    replace=True,
                )
            except ValidationError as exc:
                errors = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
                for row in rows:
                    if row["type"].name in errors:
                        row["errors"] = errors[row["type"].name]
                for key in ("__all__", "instance_type"):
                    for message in errors.get(key, []):
                        messages.error(request, message)
            else:
                if version:
                    messages.success(request, f"Saved {team.name}'s allocation (version {version.number}).")
                else:
                    messages.info(request, "Nothing changed.")
                for warning in selectors.cluster_inventory()["warnings"]:
                    messages.warning(request, warning)
                return redirect("quotas:team-detail", pk=team.pk)
    else:
        rows = editor_rows(team)
    return render(
        request,
        "quotas/allocations.html",
        {"team": team, "rows": rows, "reason_form": reason_form, "preview_url": preview_url(team)},
    )


@require_GET
def allocation_preview(request, pk):
    """htmx: the proportional defaults and cluster totals for one row while the admin types."""
    team = visible_team(request, pk)
    if not request.user.is_portal_admin:
        raise PermissionDenied("only admins change allocations")
    type_id = request.GET.get("type", "")
    if not (type_id.isascii() and type_id.isdigit()) or len(type_id) > 18:
        raise Http404("no such instance type")
    it = get_object_or_404(InstanceType, pk=type_id)
    trigger = request.headers.get("HX-Trigger-Name", "")
    return HttpResponse(preview_fragments(request, team, it, request.GET, trigger))


# --- history ------------------------------------------------------------------------------------------


@require_GET
def team_history(request, pk):
    team = visible_team(request, pk)
    return render(request, "quotas/history.html", {"team": team, "versions": selectors.team_versions(team)})


@require_POST
def version_revert(request, pk):
    version = get_object_or_404(ConfigVersion, pk=pk)
    if version.team_id:
        visible_team(request, version.team_id)
    if not request.user.is_portal_admin:
        raise PermissionDenied("only admins revert configuration")
    back = reverse("quotas:team-history", args=[version.team_id]) if version.team_id else reverse("quotas:policy")
    try:
        new = services.version_revert(version=version, user=request.user, reason=request.POST.get("reason", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Reverted to version {version.number} (saved as version {new.number}).")
    return redirect(back)


# --- cluster policy and priority classes ------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def policy(request):
    current = ClusterPolicy.load()
    form = ClusterPolicyForm(request.POST if request.method == "POST" else None, instance=current)
    if request.method == "POST":
        if not request.user.is_portal_admin:
            raise PermissionDenied("only admins change the cluster policy")
        if form.is_valid():
            try:
                version = services.cluster_policy_update(
                    user=request.user,
                    reason=form.cleaned_data["reason"],
                    task_prioritization=form.cleaned_data["task_prioritization"],
                    idle_compute=form.cleaned_data["idle_compute"],
                    backfill=form.cleaned_data["backfill"],
                )
            except ValidationError as exc:
                apply_service_errors(form, exc)
            else:
                messages.success(
                    request, f"Saved the cluster policy: {version.summary}." if version else "Nothing changed."
                )
                return redirect("quotas:policy")
    return render(
        request,
        "quotas/policy.html",
        {
            "form": form,
            "policy": ClusterPolicy.load(),
            "priority_classes": PriorityClass.objects.all(),
            "versions": selectors.cluster_versions()[:20],
        },
    )


@require_http_methods(["GET", "POST"])
@admin_required
def priority_class_edit(request, pk=None):
    pc = get_object_or_404(PriorityClass, pk=pk) if pk else None
    return _object_form(
        request,
        form_class=PriorityClassForm,
        instance=pc,
        save=lambda form: services.priority_class_save(priority_class=pc, user=request.user, **_fields(form)),
        title=f"Edit priority class {pc.name}" if pc else "New priority class",
        back=reverse("quotas:policy"),
        delete_url=reverse("quotas:priority-class-delete", args=[pk]) if pk else None,
    )


@require_POST
@admin_required
def priority_class_delete(request, pk):
    pc = get_object_or_404(PriorityClass, pk=pk)
    return _object_delete(
        request, obj=pc, delete=lambda o: services.priority_class_delete(priority_class=o), back="quotas:policy"
    )


@require_GET
@reader_required
def kueue_yaml(request):
    from quotas.kueue import kueue_yaml as render_yaml

    response = HttpResponse(render_yaml(), content_type="application/yaml")
    response["Content-Disposition"] = 'attachment; filename="kueue-queues.yaml"'
    return response
