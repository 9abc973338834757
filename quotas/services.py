"""Every write to the cluster's configuration: validated with full_clean, one transaction each, versioned.

Forms, the API and `manage.py quotas apply` all call these, so the rules (model validators and clean())
and the history live in one place. Bad input raises django.core.exceptions.ValidationError and saves
nothing.
"""

import threading
from contextlib import contextmanager

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max, ProtectedError

from quotas import history
from quotas.models import (
    ClusterPolicy,
    ComputeAllocation,
    ConfigVersion,
    InstanceType,
    NodeGroup,
    PriorityClass,
    Team,
    User,
    VersionScope,
)
from quotas.signals import configuration_changed

TEAM_POLICY_FIELDS = [f for f, _, _ in history.TEAM_FIELDS]
CLUSTER_POLICY_FIELDS = [f for f, _, _ in history.CLUSTER_FIELDS]
ALLOCATION_FIELDS = history.ALLOCATION_FIELDS


def _save(obj, *, exclude_unique=False):
    """full_clean then save; a database constraint that still trips becomes a ValidationError."""
    obj.full_clean(validate_unique=not exclude_unique)
    try:
        with transaction.atomic():
            obj.save()
    except IntegrityError as exc:
        raise ValidationError(f"this conflicts with an existing record ({exc.__class__.__name__})") from exc
    configuration_changed.send(sender=type(obj), what=obj._meta.model_name)
    return obj


def _delete(obj):
    try:
        with transaction.atomic():
            obj.delete()
    except ProtectedError as exc:
        users = sorted({str(o._meta.verbose_name_plural) for o in exc.protected_objects})
        raise ValidationError(f"{obj} is still used by {', '.join(users)}; remove those first") from exc
    configuration_changed.send(sender=type(obj), what=obj._meta.model_name)


def _set_fields(obj, fields: dict, allowed):
    unknown = set(fields) - set(allowed)
    if unknown:
        raise ValidationError(f"unknown field(s): {', '.join(sorted(unknown))}")
    for key, value in fields.items():
        setattr(obj, key, value)


# --- versions -----------------------------------------------------------------------------------------


def _versions(*, team=None, scope=None):
    if team:
        return ConfigVersion.objects.filter(team=team)
    return ConfigVersion.objects.filter(scope=scope or VersionScope.CLUSTER)


def _last_version(*, team=None, scope=None) -> ConfigVersion | None:
    return _versions(team=team, scope=scope).order_by("-number").first()


def _next_number(*, team=None, scope=None) -> int:
    return (_versions(team=team, scope=scope).aggregate(n=Max("number"))["n"] or 0) + 1


def _record(*, team, before, after, changes, user, reason, reverted_from=None, force=False, scope=None):
    """Write a version if something changed. The first recorded change of a subject that has no history
    yet (created before history, or by demo data) first stores its previous state, so it can be restored."""
    if not changes and not force:
        return None
    scope = scope or (VersionScope.TEAM if team else VersionScope.CLUSTER)
    configuration_changed.send(sender=ConfigVersion, what=scope)
    if before is not None and _last_version(team=team, scope=scope) is None:
        ConfigVersion.objects.create(
            scope=scope, team=team, number=1, snapshot=before, changes=["state before history was recorded"]
        )
    return ConfigVersion.objects.create(
        scope=scope,
        team=team,
        number=_next_number(team=team, scope=scope),
        snapshot=after,
        changes=changes or ["no change"],
        author=user if user and user.is_authenticated else None,
        reason=(reason or "")[:300],
        reverted_from=reverted_from,
    )


def _locked_team(team: Team) -> Team:
    return Team.objects.select_for_update().get(pk=team.pk)


# --- teams and allocations ----------------------------------------------------------------------------


def _resolve_members(members) -> list[User]:
    users = []
    for m in members:
        if isinstance(m, User):
            users.append(m)
            continue
        try:
            users.append(User.objects.get(username=m))
        except User.DoesNotExist:
            raise ValidationError({"members": f"no user named {m!r}"}) from None
    return users


@transaction.atomic
def team_create(*, user=None, members=(), allocations=None, reason="", **fields) -> Team:
    team = Team()
    _set_fields(team, fields, TEAM_POLICY_FIELDS)
    _save(team)
    team.members.set(_resolve_members(members))
    if allocations:
        _apply_allocations(team, allocations, replace=True)
    _record(team=team, before=None, after=history.team_snapshot(team), changes=["created"], user=user, reason=reason)
    return team


@transaction.atomic
def team_update(*, team: Team, user=None, members=None, reason="", **fields) -> ConfigVersion | None:
    """Change a team's policy fields and/or members; returns the new version (None: nothing changed)."""
    team = _locked_team(team)
    before = history.team_snapshot(team)
    _set_fields(team, fields, TEAM_POLICY_FIELDS)
    _save(team)
    if members is not None:
        team.members.set(_resolve_members(members))
    after = history.team_snapshot(team)
    return _record(
        team=team, before=before, after=after, changes=history.team_changes(before, after), user=user, reason=reason
    )


@transaction.atomic
def team_delete(*, team: Team, user=None) -> None:
    _delete(team)


def _instance_type(key) -> InstanceType:
    if isinstance(key, InstanceType):
        return key
    if not isinstance(key, str) or "\x00" in key:  # PostgreSQL cannot even look up a NUL character
        raise ValidationError({"instance_type": f"unknown instance type {key!r}"})
    try:
        return InstanceType.objects.get(name=key)
    except InstanceType.DoesNotExist:
        raise ValidationError({"instance_type": f"unknown instance type {key!r}"}) from None


SNAPSHOT_ONLY_KEYS = ("resolved", "accelerator_resource")
WHOLE_FIELDS = ("instances", "accelerators")


def _whole_or_none(value) -> bool:
    """Accelerators and instances come whole: 2 or "2", never 1.5 (int() would silently truncate it)."""
    if value is None or isinstance(value, str):
        return True  # strings are checked by the model field
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _apply_allocations(team: Team, allocations: dict, *, replace: bool) -> None:
    """allocations: {instance type or its name: {field: value} or None (remove)}."""
    existing = {a.instance_type_id: a for a in team.allocations.select_related("instance_type")}
    seen = set()
    errors = {}
    for key, values in allocations.items():
        it = _instance_type(key)
        seen.add(it.pk)
        values = {k: v for k, v in (values or {}).items() if k not in SNAPSHOT_ONLY_KEYS}
        unknown = set(values) - set(ALLOCATION_FIELDS)
        if unknown:
            raise ValidationError({it.name: f"unknown field(s): {', '.join(sorted(unknown))}"})
        fields = {f: values.get(f) for f in ALLOCATION_FIELDS}
        wrong = [f for f in WHOLE_FIELDS if not _whole_or_none(fields[f])]
        if wrong:
            errors[it.name] = "; ".join(f"{f}: must be a whole number" for f in wrong)
            continue
        alloc = existing.get(it.pk)
        if all(v is None for v in fields.values()):
            if alloc is not None:
                alloc.delete()
            continue
        alloc = alloc or ComputeAllocation(team=team, instance_type=it)
        for f, v in fields.items():
            setattr(alloc, f, v)
        try:
            alloc.full_clean(exclude=["team"])
        except ValidationError as exc:
            errors[it.name] = "; ".join(
                f"{k}: {' '.join(v)}" if k != "__all__" else " ".join(v) for k, v in exc.message_dict.items()
            )
            continue
        alloc.save()
    if errors:
        raise ValidationError(errors)
    if replace:
        team.allocations.exclude(instance_type_id__in=seen).delete()


@transaction.atomic
def allocations_update(*, team: Team, allocations: dict, user=None, reason="", replace=False) -> ConfigVersion | None:
    """Set a team's allocations per instance type (None or all-empty removes one; replace=True also
    removes those not named). Returns the new version, or None if nothing changed."""
    team = _locked_team(team)
    before = history.team_snapshot(team)
    _apply_allocations(team, allocations, replace=replace)
    after = history.team_snapshot(team)
    return _record(
        team=team, before=before, after=after, changes=history.team_changes(before, after), user=user, reason=reason
    )


@transaction.atomic
def team_configure(
    *, team: Team, user=None, fields: dict, members=None, allocations: dict | None = None, reason=""
) -> ConfigVersion | None:
    """Policy fields, members and (replacing) allocations in one change and one version."""
    team = _locked_team(team)
    before = history.team_snapshot(team)
    _set_fields(team, fields, TEAM_POLICY_FIELDS)
    _save(team)
    if members is not None:
        team.members.set(_resolve_members(members))
    if allocations is not None:
        _apply_allocations(team, allocations, replace=True)
    after = history.team_snapshot(team)
    return _record(
        team=team, before=before, after=after, changes=history.team_changes(before, after), user=user, reason=reason
    )


@transaction.atomic
def cluster_policy_update(*, user=None, reason="", **fields) -> ConfigVersion | None:
    policy = ClusterPolicy.load()
    policy = ClusterPolicy.objects.select_for_update().get(pk=policy.pk)
    before = history.cluster_snapshot(policy)
    _set_fields(policy, fields, CLUSTER_POLICY_FIELDS)
    _save(policy)
    after = history.cluster_snapshot(policy)
    return _record(
        team=None, before=before, after=after, changes=history.cluster_changes(before, after), user=user, reason=reason
    )


@transaction.atomic
def version_revert(*, version: ConfigVersion, user=None, reason="") -> ConfigVersion:
    """Restore an earlier version's state; the revert itself is a new version."""
    if version.scope == VersionScope.INVENTORY:
        raise ValidationError("inventory versions are a record; change the instance types or node groups instead")
    snap = version.snapshot
    note = f"revert to version {version.number}" + (f": {reason}" if reason else "")
    if version.scope == VersionScope.CLUSTER:
        policy = ClusterPolicy.objects.select_for_update().get(pk=ClusterPolicy.load().pk)
        before = history.cluster_snapshot(policy)
        _set_fields(policy, {f: snap[f] for f in CLUSTER_POLICY_FIELDS if f in snap}, CLUSTER_POLICY_FIELDS)
        _save(policy)
        after = history.cluster_snapshot(policy)
        changes = history.cluster_changes(before, after)
        return _record(
            team=None,
            before=before,
            after=after,
            changes=changes,
            user=user,
            reason=note,
            reverted_from=version,
            force=True,
        )
    team = _locked_team(version.team)
    before = history.team_snapshot(team)
    _set_fields(team, {f: snap[f] for f in TEAM_POLICY_FIELDS if f in snap}, TEAM_POLICY_FIELDS)
    _save(team)
    present = set(User.objects.filter(username__in=snap.get("members", [])).values_list("username", flat=True))
    team.members.set(User.objects.filter(username__in=present))
    missing = [name for name in snap.get("allocations", {}) if not InstanceType.objects.filter(name=name).exists()]
    if missing:
        raise ValidationError(f"cannot revert: instance type {', '.join(missing)} no longer exists")
    _apply_allocations(team, snap.get("allocations", {}), replace=True)
    after = history.team_snapshot(team)
    return _record(
        team=team,
        before=before,
        after=after,
        changes=history.team_changes(before, after),
        user=user,
        reason=note,
        reverted_from=version,
        force=True,
    )


# --- inventory and priority classes ---------------------------------------------------------------------

INSTANCE_TYPE_FIELDS = [
    "name", "family", "accelerator_kind", "accelerator_resource", "accelerators", "vcpus", "memory_gib",
    "efa_interfaces",
]  # fmt: skip
NODE_GROUP_FIELDS = ["name", "instance_type", "node_count"]
PRIORITY_CLASS_FIELDS = ["name", "weight", "description"]


_inventory_block = threading.local()


@contextmanager
def inventory_change(*, user=None, reason=""):
    """Every write to instance types, node groups and priority classes inside this block becomes one version
    of the inventory (scope "inventory"), in the same transaction. Blocks nest: the outermost records."""
    if getattr(_inventory_block, "active", False):
        yield
        return
    with transaction.atomic():
        ClusterPolicy.objects.select_for_update().get(pk=ClusterPolicy.load().pk)  # one inventory writer at a time
        before = history.inventory_snapshot()
        _inventory_block.active = True
        try:
            yield
        finally:
            _inventory_block.active = False
        after = history.inventory_snapshot()
        _record(
            team=None,
            scope=VersionScope.INVENTORY,
            before=before,
            after=after,
            changes=history.inventory_changes(before, after),
            user=user,
            reason=reason,
        )


def instance_type_save(*, instance_type: InstanceType | None = None, user=None, reason="", **fields) -> InstanceType:
    with inventory_change(user=user, reason=reason):
        it = instance_type or InstanceType()
        _set_fields(it, fields, INSTANCE_TYPE_FIELDS)
        return _save(it)


def instance_type_delete(*, instance_type: InstanceType, user=None, reason="") -> None:
    with inventory_change(user=user, reason=reason):
        _delete(instance_type)


def node_group_save(*, node_group: NodeGroup | None = None, user=None, reason="", **fields) -> NodeGroup:
    with inventory_change(user=user, reason=reason):
        ng = node_group or NodeGroup()
        if "instance_type" in fields:
            fields["instance_type"] = _instance_type(fields["instance_type"])
        _set_fields(ng, fields, NODE_GROUP_FIELDS)
        return _save(ng)


def node_group_delete(*, node_group: NodeGroup, user=None, reason="") -> None:
    with inventory_change(user=user, reason=reason):
        _delete(node_group)


def priority_class_save(
    *, priority_class: PriorityClass | None = None, user=None, reason="", **fields
) -> PriorityClass:
    with inventory_change(user=user, reason=reason):
        pc = priority_class or PriorityClass()
        _set_fields(pc, fields, PRIORITY_CLASS_FIELDS)
        return _save(pc)


def priority_class_delete(*, priority_class: PriorityClass, user=None, reason="") -> None:
    with inventory_change(user=user, reason=reason):
        _delete(priority_class)
