"""The allocation editor's rows: one per instance type, each resource field "set" by the admin or filled with
the proportional default. The defaults come from ComputeAllocation.resolved() (the engine's one rule), both
when the page is drawn and in the htmx preview while the admin types; no JavaScript copy of the rule."""

from django.template.loader import render_to_string
from django.urls import reverse

from quotas import selectors
from quotas.forms import AllocationRowForm
from quotas.history import number
from quotas.models import ComputeAllocation, InstanceType

RESOURCE_OF_FIELD = {"vcpus": "cpu", "memory_gib": "memory"}
FIELDS = ("instances", "accelerators", "vcpus", "memory_gib")
UNITS = {"vcpus": "vCPU", "memory_gib": "GiB"}


def _resource(it: InstanceType, field: str) -> str:
    return RESOURCE_OF_FIELD.get(field) or it.accelerator_key


def _resolved(it: InstanceType, values: dict | None) -> dict:
    if not values:
        return {}
    return ComputeAllocation(instance_type=it, **values).resolved()


def _cells(it: InstanceType, values: dict | None, srcs: dict, raw: dict, errors: dict) -> list[dict]:
    """values: what is stored (None: default); raw: what the inputs hold (when the form did not parse)."""
    resolved = _resolved(it, values)
    by_instances = bool(values) and values.get("instances") is not None
    cells = []
    for field in FIELDS:
        cell = {"field": field, "errors": errors.get(field, [])}
        if field == "instances":
            cell.update(src="set" if raw.get(field) not in (None, "") else "none", value=raw.get(field) or "")
            cell["unit"] = "instances"
        elif field == "accelerators" and not it.accelerator_key:
            cell.update(src="na", value="", disabled=True, unit="")
        else:
            unit = UNITS.get(field) or it.get_accelerator_resource_display().split(" (")[0]
            cell["unit"] = unit
            if by_instances:
                cell.update(src="instances", value=number(resolved.get(_resource(it, field))))
            elif srcs.get(field) == "set":
                cell.update(src="set", value=raw.get(field, ""))
            else:
                default = resolved.get(_resource(it, field))
                cell.update(src="default", value=number(default) if default is not None else "")
        cells.append(cell)
    return cells


def _total(team, it: InstanceType, nodes: int, values: dict | None, others: dict) -> dict:
    allocated = dict(others.get(it.pk, {}))
    for resource, value in _resolved(it, values).items():
        allocated[resource] = allocated.get(resource, 0) + value
    return selectors.capacity_row(it, nodes, allocated)


def _row(team, it, values, srcs, raw, errors, others, form=None) -> dict:
    return {
        "type": it,
        "prefix": f"t{it.pk}",
        "form": form,
        "cells": _cells(it, values, srcs, raw, errors),
        "total": _total(team, it, it.nodes or 0, values, others),
        "errors": errors.get("__all__", []),
    }


def editor_rows(team) -> list[dict]:
    current = {a.instance_type_id: a for a in team.allocations.select_related("instance_type")}
    others = selectors.allocated_by_type(exclude_team=team)
    rows = []
    for it in selectors.instance_types_with_nodes():
        alloc = current.get(it.pk)
        values = {f: getattr(alloc, f) for f in FIELDS} if alloc else None
        srcs = {f: "set" if alloc and getattr(alloc, f) is not None else "default" for f in FIELDS}
        raw = {f: number(getattr(alloc, f)) if alloc and getattr(alloc, f) is not None else "" for f in FIELDS}
        rows.append(_row(team, it, values, srcs, raw, {}, others))
    return rows


def _parse(it: InstanceType, data) -> tuple[AllocationRowForm, dict, dict, dict | None]:
    form = AllocationRowForm(data, instance_type=it)
    prefix = form.prefix
    raw = {f: (data.get(f"{prefix}-{f}") or "").strip() for f in FIELDS}
    srcs = {f: data.get(f"{prefix}-{f}_src") or "default" for f in FIELDS}
    if form.is_valid():
        return form, raw, srcs, form.allocation()
    return form, raw, srcs, None


def rows_from_post(team, data) -> tuple[list[dict], bool]:
    others = selectors.allocated_by_type(exclude_team=team)
    rows, ok = [], True
    for it in selectors.instance_types_with_nodes():
        form, raw, srcs, values = _parse(it, data)
        errors = form.errors if not form.is_valid() else {}
        ok = ok and form.is_valid()
        rows.append(_row(team, it, values, srcs, raw, dict(errors), others, form=form))
    return rows, ok


def preview_fragments(request, team, it: InstanceType, params, trigger: str) -> str:
    """Out-of-band swaps for one row: every input the admin is not typing in, the set/default marks and
    the instance type's total against capacity."""
    it = selectors.instance_types_with_nodes().get(pk=it.pk)
    prefix = f"t{it.pk}"
    data = params.copy()
    field = trigger.removeprefix(f"{prefix}-") if trigger.startswith(f"{prefix}-") else ""
    reset = params.get("reset", "")
    if reset in RESOURCE_OF_FIELD or reset == "accelerators":
        data[f"{prefix}-{reset}_src"] = "default"
        data[f"{prefix}-{reset}"] = ""
        field = ""
    typed = (params.get(trigger) or "").strip() if field else ""
    if field in ("accelerators", "vcpus", "memory_gib"):
        data[f"{prefix}-{field}_src"] = "set" if typed else "default"
        if typed:
            data[f"{prefix}-instances"] = ""  # resources typed: the row is no longer whole instances
    elif field == "instances" and typed:
        for f in ("accelerators", "vcpus", "memory_gib"):
            data[f"{prefix}-{f}_src"] = "default"
    form, raw, srcs, values = _parse(it, data)
    errors = dict(form.errors) if not form.is_valid() else {}
    others = selectors.allocated_by_type(exclude_team=team)
    if values is None and errors:
        # Keep what the inputs hold; show why the value is not understood next to it.
        values = None
    row = _row(team, it, values, srcs, raw, errors, others)
    return render_to_string(
        "quotas/_allocation_preview.html",
        {"row": row, "trigger": field, "preview_url": preview_url(team), "keep_values": bool(errors)},
        request=request,
    )


def preview_url(team) -> str:
    return reverse("quotas:allocation-preview", args=[team.pk])
