"""Pages for deciding with evidence. Visibility: a team's fair share follows Team.objects.visible_to (another
team's page is a 404); replays show every team, so admins and managers read them and only admins create,
save or throw them away. Writes go through scheduling.whatif.services."""

from functools import wraps

import yaml
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from quotas import iac
from quotas.allocation_editor import rows_from_post
from quotas.forms import ClusterPolicyForm, TeamForm
from quotas.models import Team
from scheduling.whatif import selectors, services
from scheduling.whatif.advice import advice_replay as advice_replay_service
from scheduling.whatif.fairshare import fair_share_explained
from scheduling.whatif.forms import DecisionForm, ReplayForm
from scheduling.whatif.models import Advice

TEAM_DRAFT_FIELDS = ("cohort", "fair_share_weight", "sharing", "borrow_limit_pct", "preempt_team_tasks")


def admin_required(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_portal_admin:
            raise PermissionDenied("only admins replay drafts and decide on them")
        return view(request, *args, **kwargs)

    return wrapper


def reader_required(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.sees_all_teams:
            raise PermissionDenied("admins and managers only")
        return view(request, *args, **kwargs)

    return wrapper


@require_GET
def team_fair_share(request, pk):
    team = get_object_or_404(Team.objects.visible_to(request.user), pk=pk)
    return render(
        request, "whatif/fair_share.html", {"team": team, "derivations": fair_share_explained(team, user=request.user)}
    )


@require_GET
@reader_required
def replay_list(request):
    return render(request, "whatif/replay_list.html", {"replays": selectors.replays_visible_to(request.user)[:200]})


def _window(data) -> int:
    try:
        return int(data.get("window_days") or 7)
    except (TypeError, ValueError):
        return 0  # refused by the service with the allowed range


def _start(request, draft: dict, *, title: str = "", back: str):
    try:
        replay = services.replay_create(user=request.user, draft=draft, window_days=_window(request.POST), title=title)
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
        return redirect(back)
    return redirect(replay)


@require_http_methods(["GET", "POST"])
@admin_required
def replay_new(request):
    """A draft of anything in the configuration (allocations, weights, sharing, borrow limits, priority
    classes, cluster policy, node groups), as YAML in the export format, prefilled with the current one."""
    if request.method == "POST":
        form = ReplayForm(request.POST)
        if form.is_valid():
            try:
                draft = services.draft_parse(form.cleaned_data["draft"])
                replay = services.replay_create(
                    user=request.user,
                    draft=draft,
                    title=form.cleaned_data["title"],
                    window_days=form.cleaned_data["window_days"],
                )
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                return redirect(replay)
    else:
        form = ReplayForm(initial={"draft": iac.export_yaml(), "window_days": 7})
    return render(request, "whatif/replay_new.html", {"form": form})


@require_POST
@admin_required
def replay_from_allocations(request, pk):
    """The allocation editor's "Replay this draft": the same form, posted here instead of saved."""
    team = get_object_or_404(Team, pk=pk)
    rows, ok = rows_from_post(team, request.POST)
    back = reverse("quotas:allocations", args=[team.pk])
    if not ok:
        messages.error(request, "Fix the allocation's errors before replaying it.")
        return redirect(back)
    allocations = {row["form"].instance_type.name: row["form"].allocation() for row in rows}
    draft = services.draft_with_team(team_name=team.name, allocations=allocations)
    return _start(request, draft, title=f"{team.name}: allocation draft", back=back)


@require_POST
@admin_required
def replay_from_team(request, pk):
    """The team form's "Replay this draft": weight, sharing, borrow limit, cohort, preemption."""
    team = get_object_or_404(Team, pk=pk)
    form = TeamForm(request.POST, instance=Team.objects.get(pk=team.pk))
    back = reverse("quotas:team-edit", args=[team.pk])
    if not form.is_valid():
        messages.error(request, "Fix the team's errors before replaying it.")
        return redirect(back)
    fields = {k: v for k, v in form.service_fields().items() if k in TEAM_DRAFT_FIELDS}
    draft = services.draft_with_team(team_name=team.name, fields=fields)
    return _start(request, draft, title=f"{team.name}: policy draft", back=back)


@require_POST
@admin_required
def replay_from_policy(request):
    """The policy page's "Replay this draft"."""
    form = ClusterPolicyForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a valid policy before replaying it.")
        return redirect("quotas:policy")
    fields = {k: form.cleaned_data[k] for k in ClusterPolicyForm.Meta.fields}
    return _start(request, {"cluster_policy": fields}, title="cluster policy draft", back=reverse("quotas:policy"))


def _replay(request, pk):
    return get_object_or_404(selectors.replays_visible_to(request.user), pk=pk)


@require_GET
@reader_required
def replay_detail(request, pk):
    replay = _replay(request, pk)
    context = {
        "replay": replay,
        "rows": selectors.comparison_rows(replay.results or {}),
        "decision_form": DecisionForm(),
        "draft_yaml": yaml.safe_dump(replay.draft, sort_keys=False) if replay.draft else "",
    }
    if request.htmx and not replay.finished:
        return render(request, "whatif/_progress.html", context)
    if request.htmx:
        response = render(request, "whatif/_progress.html", context)
        response["HX-Refresh"] = "true"  # done: load the whole page with its results
        return response
    return render(request, "whatif/replay_detail.html", context)


@require_POST
@admin_required
def replay_save(request, pk):
    replay = _replay(request, pk)
    form = DecisionForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    try:
        lines = services.replay_save(
            replay=replay, user=request.user, reason=reason, url=request.build_absolute_uri(replay.get_absolute_url())
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, "Saved the draft as the configuration: " + " ".join(lines))
    return redirect(replay)


@require_POST
@admin_required
def replay_discard(request, pk):
    replay = _replay(request, pk)
    form = DecisionForm(request.POST)
    try:
        services.replay_discard(
            replay=replay, user=request.user, reason=form.cleaned_data["reason"] if form.is_valid() else ""
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.info(request, "Threw the draft away; the configuration is unchanged.")
    return redirect(replay)


@require_GET
@reader_required
def advice_list(request):
    """This week's right-sizing proposals, each with its evidence and a one-click replay (admins)."""
    latest = Advice.objects.order_by("-batch").values_list("batch", flat=True).first()
    proposals = Advice.objects.filter(batch=latest).select_related("team", "instance_type", "replay") if latest else []
    return render(request, "whatif/advice.html", {"proposals": proposals, "batch": latest})


@require_POST
@admin_required
def advice_replay(request, pk):
    advice = get_object_or_404(Advice, pk=pk)
    if advice.replay_id:
        return redirect(advice.replay)
    try:
        replay = advice_replay_service(advice=advice, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("whatif:advice")
    return redirect(replay)
