"""Quota requests: a scientist asks, the what-if replay of the request runs at once, an admin approves (the
allocation saved through quotas.services as a normal version naming the request), changes the amounts (and it
is replayed again) or refuses with a reason. Every step is a RequestEvent; both sides are told in the portal
and by e-mail. Who may do what is checked here, so pages, API and commands share one rule."""

from __future__ import annotations

from datetime import date

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from quotas import iac
from quotas import services as quota_services
from quotas.models import ComputeAllocation, InstanceType, Role, Team, User
from scheduling.whatif import services
from scheduling.whatif.models import (
    ALLOCATION_FIELDS,
    Notification,
    QuotaRequest,
    RequestEvent,
    RequestStatus,
)

REPLAY_DAYS = 30
REASON_MAX = QuotaRequest._meta.get_field("decision_reason").max_length


def describe(amounts: dict, it: InstanceType) -> str:
    """'16 GPUs' / '2 instances' / '96 vCPUs, 1024 GiB' — what an allocation entry gives, in words."""
    if not amounts:
        return "no quota"
    if amounts.get("instances") is not None:
        return f"{amounts['instances']} instance{'s' if amounts['instances'] != 1 else ''}"
    parts = []
    if amounts.get("accelerators") is not None:
        unit = {"gpu": "GPUs", "neuron": "Neuron devices"}.get(it.accelerator_key, "accelerators")
        parts.append(f"{amounts['accelerators']:g} {unit}")
    if amounts.get("vcpus") is not None:
        parts.append(f"{amounts['vcpus']:g} vCPUs")
    if amounts.get("memory_gib") is not None:
        parts.append(f"{amounts['memory_gib']:g} GiB")
    return ", ".join(parts)


def _current(team: Team, it: InstanceType) -> dict:
    alloc = ComputeAllocation.objects.filter(team=team, instance_type=it).first()
    return {f: getattr(alloc, f) for f in ALLOCATION_FIELDS if getattr(alloc, f) is not None} if alloc else {}


def _clean_amounts(team: Team, it: InstanceType, amounts: dict) -> dict:
    """The allocation's own validators decide what an amount may be."""
    unknown = set(amounts) - set(ALLOCATION_FIELDS)
    if unknown:
        raise ValidationError({"amounts": f"unknown field(s): {', '.join(sorted(unknown))}"})
    values = {f: amounts.get(f) for f in ALLOCATION_FIELDS}
    if all(v is None for v in values.values()):
        raise ValidationError({"accelerators": "say how much quota the team should have (0 to give it all up)"})
    ComputeAllocation(team=team, instance_type=it, **values).full_clean(exclude=["team"], validate_unique=False)
    return {f: v for f, v in values.items() if v is not None}


def _admins():
    return User.objects.filter(Q(role=Role.ADMIN) | Q(is_superuser=True), is_active=True)


def _notify(users, text: str, url: str) -> None:
    """A notification in the portal and an e-mail (once the change commits) for each user."""
    users = list({u.pk: u for u in users if u is not None}.values())
    Notification.objects.bulk_create([Notification(user=u, text=text[:300], url=url) for u in users])
    emails = [u.email for u in users if u.email]
    if emails:
        transaction.on_commit(
            lambda: send_mail(text[:120], f"{text}\n\n{url}", settings.DEFAULT_FROM_EMAIL, emails, fail_silently=True)
        )


def _event(request: QuotaRequest, actor, action: str, text: str = "") -> None:
    RequestEvent.objects.create(request=request, actor=actor, action=action, text=text)


def _replay(request: QuotaRequest, user):
    """A what-if replay of the request: the current configuration with the team's allocation on that type
    set to what is asked."""
    team_entry = next(t for t in iac.export_config()["teams"] if t["name"] == request.team.name)
    allocations = dict(team_entry["allocations"])
    allocations[request.instance_type.name] = request.amounts()
    draft = services.draft_with_team(team_name=request.team.name, allocations=allocations)
    title = f"quota request #{request.pk}: {request.team.name} on {request.instance_type.name} → " + describe(
        request.amounts(), request.instance_type
    )
    return services.replay_create(user=user, draft=draft, window_days=REPLAY_DAYS, title=title)


def _require_open(request: QuotaRequest) -> QuotaRequest:
    request = QuotaRequest.objects.select_for_update().get(pk=request.pk)
    if request.status != RequestStatus.PENDING:
        raise ValidationError(f"this request is already {request.get_status_display().lower()}")
    return request


def _reason(text: str) -> str:
    text = (text or "").strip()
    if len(text) > REASON_MAX:
        raise ValidationError({"reason": f"at most {REASON_MAX} characters"})
    return text


def _require_admin(user) -> None:
    if not user.is_portal_admin:
        raise PermissionDenied("only admins decide on quota requests")


@transaction.atomic
def quota_request_submit(
    *, user, team: Team, instance_type: InstanceType, amounts: dict, start_on: date, why: str, url_for=None
) -> QuotaRequest:
    """A scientist of the team (or an admin) asks. The replay is queued at once."""
    if not (user.is_portal_admin or (user.is_scientist and team.members.filter(pk=user.pk).exists())):
        raise PermissionDenied("only the team's members ask for its quota")
    if start_on < timezone.localdate():
        raise ValidationError({"start_on": "from today or later"})
    if not (why or "").strip():
        raise ValidationError({"why": "say why the team needs it"})
    cleaned = _clean_amounts(team, instance_type, amounts)
    request = QuotaRequest(
        team=team,
        instance_type=instance_type,
        requested_by=user,
        start_on=start_on,
        why=why.strip(),
        current=_current(team, instance_type),
        **cleaned,
    )
    request.full_clean()
    request.save()
    now, asked = describe(request.current, instance_type), describe(cleaned, instance_type)
    _event(request, user, "submitted", f"asked for {asked} on {instance_type.name} (now {now}) from {start_on}")
    request.replay = _replay(request, user)
    request.save(update_fields=["replay"])
    _event(request, None, "replayed", f"what-if replay #{request.replay.pk} of the last {REPLAY_DAYS} days queued")
    url = url_for(request) if url_for else request.get_absolute_url()
    _notify(_admins(), f"{user.username} asks for {asked} of {instance_type.name} for {team.name} (now {now})", url)
    _notify([user], f"Your quota request #{request.pk} for {team.name} is with the admins", url)
    return request


@transaction.atomic
def quota_request_change(*, request: QuotaRequest, user, amounts: dict, reason: str = "", url_for=None):
    """An admin changes the amounts; the request is replayed again and stays open for approval."""
    _require_admin(user)
    reason = _reason(reason)
    request = _require_open(request)
    cleaned = _clean_amounts(request.team, request.instance_type, amounts)
    before = describe(request.amounts(), request.instance_type)
    for f in ALLOCATION_FIELDS:
        setattr(request, f, cleaned.get(f))
    request.full_clean()
    request.replay = _replay(request, user)
    request.save()
    after = describe(cleaned, request.instance_type)
    _event(request, user, "changed", f"{before} → {after}" + (f": {reason.strip()}" if reason.strip() else ""))
    _event(request, None, "replayed", f"what-if replay #{request.replay.pk} of the changed amounts queued")
    url = url_for(request) if url_for else request.get_absolute_url()
    _notify(
        [request.requested_by], f"{user.username} changed your quota request #{request.pk}: {before} → {after}", url
    )
    return request


@transaction.atomic
def quota_request_approve(*, request: QuotaRequest, user, reason: str = "", url_for=None) -> QuotaRequest:
    """Approve; where its date has come, the allocation is saved now (a version naming the request), else
    on its date by the daily task."""
    _require_admin(user)
    reason = _reason(reason)
    request = _require_open(request)
    request.status = RequestStatus.APPROVED
    request.decided_by, request.decided_at, request.decision_reason = user, timezone.now(), reason
    request.save()
    _event(request, user, "approved", reason)
    if request.start_on <= timezone.localdate():
        _apply(request, url_for=url_for)
    else:
        url = url_for(request) if url_for else request.get_absolute_url()
        _notify(
            [request.requested_by, user],
            f"Quota request #{request.pk} approved: it takes effect on {request.start_on}",
            url,
        )
    return request


def _apply(request: QuotaRequest, *, url_for=None) -> None:
    it = request.instance_type
    values = {f: getattr(request, f) for f in ALLOCATION_FIELDS}
    reason = f"quota request #{request.pk} by {request.requested_by.username}: {request.why}"
    version = quota_services.allocations_update(
        team=request.team, allocations={it.name: values}, user=request.decided_by, reason=reason[:300]
    )
    request.status, request.version = RequestStatus.APPLIED, version
    request.save(update_fields=["status", "version"])
    number = f"version {version.number}" if version else "no change: the allocation was already so"
    _event(request, request.decided_by, "applied", f"{request.team.name}'s allocation saved ({number})")
    url = url_for(request) if url_for else request.get_absolute_url()
    _notify(
        [request.requested_by, request.decided_by],
        f"Quota request #{request.pk} is in effect: {request.team.name} has {describe(request.amounts(), it)} "
        f"of {it.name}",
        url,
    )


@transaction.atomic
def quota_request_refuse(*, request: QuotaRequest, user, reason: str, url_for=None) -> QuotaRequest:
    _require_admin(user)
    reason = _reason(reason)
    if not reason:
        raise ValidationError({"reason": "say why the request is refused"})
    request = _require_open(request)
    request.status = RequestStatus.REFUSED
    request.decided_by, request.decided_at, request.decision_reason = user, timezone.now(), reason
    request.save()
    _event(request, user, "refused", reason)
    url = url_for(request) if url_for else request.get_absolute_url()
    _notify(
        [request.requested_by], f"Quota request #{request.pk} was refused by {user.username}: {reason.strip()}", url
    )
    return request


@transaction.atomic
def quota_request_withdraw(*, request: QuotaRequest, user) -> QuotaRequest:
    if not (user.is_portal_admin or request.requested_by_id == user.pk):
        raise PermissionDenied("only who asked withdraws a request")
    request = _require_open(request)
    request.status = RequestStatus.WITHDRAWN
    request.save(update_fields=["status"])
    _event(request, user, "withdrawn")
    return request


def apply_due_requests(*, today: date | None = None) -> int:
    """Approved requests whose date has come are saved as the allocation (the daily Celery task)."""
    today = today or timezone.localdate()
    applied = 0
    for pk in QuotaRequest.objects.filter(status=RequestStatus.APPROVED, start_on__lte=today).values_list(
        "pk", flat=True
    ):
        with transaction.atomic():
            request = QuotaRequest.objects.select_for_update().get(pk=pk)
            if request.status == RequestStatus.APPROVED:
                _apply(request)
                applied += 1
    return applied
