"""Pages for quota requests. Scientists ask for their teams and see their teams' requests; managers read every
request; only admins approve, change or refuse (the services check it again). The replay beside a request
shows every team, so scientists see its status, not its figures."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from scheduling.whatif import requests as quota_requests
from scheduling.whatif import selectors
from scheduling.whatif.forms import ChangeForm, DecisionForm, QuotaRequestForm
from scheduling.whatif.models import Notification, QuotaRequest


def _url_for(request):
    return lambda quota_request: request.build_absolute_uri(quota_request.get_absolute_url())


def _errors(request, form, exc: ValidationError):
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            if form is not None and field in form.fields:
                form.add_error(field, errors)
            else:
                for message in errors:
                    messages.error(request, message)
    else:
        for message in exc.messages:
            messages.error(request, message)


@require_GET
def request_list(request):
    visible = QuotaRequest.objects.visible_to(request.user).select_related("team", "instance_type", "requested_by")
    notes = list(Notification.objects.filter(user=request.user, read_at__isnull=True)[:20])
    Notification.objects.filter(pk__in=[n.pk for n in notes]).update(read_at=timezone.now())
    rows = [
        {
            "r": r,
            "asked": quota_requests.describe(r.amounts(), r.instance_type),
            "now": quota_requests.describe(r.current, r.instance_type),
        }
        for r in visible[:200]
    ]
    return render(request, "whatif/request_list.html", {"rows": rows, "notifications": notes})


@require_http_methods(["GET", "POST"])
def request_new(request):
    if request.user.is_manager:
        raise PermissionDenied("managers read requests; scientists and admins make them")
    form = QuotaRequestForm(
        request.POST or None, user=request.user, initial={"start_on": timezone.localdate(), **request.GET.dict()}
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            created = quota_requests.quota_request_submit(
                user=request.user,
                team=data["team"],
                instance_type=data["instance_type"],
                amounts=form.amounts(),
                start_on=data["start_on"],
                why=data["why"],
                url_for=_url_for(request),
            )
        except ValidationError as exc:
            _errors(request, form, exc)
        else:
            messages.success(request, f"Sent quota request #{created.pk}; the admins are told.")
            return redirect(created)
    return render(request, "whatif/request_new.html", {"form": form})


def _visible(request, pk) -> QuotaRequest:
    return get_object_or_404(QuotaRequest.objects.visible_to(request.user), pk=pk)


@require_GET
def request_detail(request, pk):
    quota_request = _visible(request, pk)
    replay = quota_request.replay if request.user.sees_all_teams else None
    own_rows = []  # a scientist sees the replay's figures for the request's own team only
    if not request.user.sees_all_teams and quota_request.replay and quota_request.replay.results:
        own_rows = [
            r for r in selectors.comparison_rows(quota_request.replay.results) if r["team"] == quota_request.team.name
        ]
    context = {
        "req": quota_request,
        "asked": quota_requests.describe(quota_request.amounts(), quota_request.instance_type),
        "now": quota_requests.describe(quota_request.current, quota_request.instance_type),
        "events": quota_request.events.select_related("actor"),
        "replay": replay,
        "rows": selectors.comparison_rows(replay.results or {}) if replay else own_rows,
        "decision_form": DecisionForm(),
        "change_form": ChangeForm(initial=quota_request.amounts()),
        "today": timezone.localdate(),
    }
    return render(request, "whatif/request_detail.html", context)


def _act(request, pk, action):
    quota_request = _visible(request, pk)
    try:
        action(quota_request)
    except ValidationError as exc:
        _errors(request, None, exc)
    return redirect(quota_request)


@require_POST
def request_approve(request, pk):
    form = DecisionForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""

    def approve(r):
        quota_requests.quota_request_approve(request=r, user=request.user, reason=reason, url_for=_url_for(request))
        messages.success(request, f"Approved quota request #{r.pk}.")

    return _act(request, pk, approve)


@require_POST
def request_refuse(request, pk):
    reason = request.POST.get("reason", "")

    def refuse(r):
        quota_requests.quota_request_refuse(request=r, user=request.user, reason=reason, url_for=_url_for(request))
        messages.info(request, f"Refused quota request #{r.pk}.")

    return _act(request, pk, refuse)


@require_POST
def request_change(request, pk):
    form = ChangeForm(request.POST)

    def change(r):
        if not request.user.is_portal_admin:
            raise PermissionDenied("only admins change quota requests")
        if not form.is_valid():
            raise ValidationError(" ".join(e for errors in form.errors.values() for e in errors))
        quota_requests.quota_request_change(
            request=r,
            user=request.user,
            amounts=form.amounts(),
            reason=form.cleaned_data["reason"],
            url_for=_url_for(request),
        )
        messages.success(request, f"Changed quota request #{r.pk}; its replay runs again.")

    return _act(request, pk, change)


@require_POST
def request_withdraw(request, pk):
    def withdraw(r):
        quota_requests.quota_request_withdraw(request=r, user=request.user)
        messages.info(request, f"Withdrew quota request #{r.pk}.")

    return _act(request, pk, withdraw)
