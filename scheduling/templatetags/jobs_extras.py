from django import template
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

register = template.Library()

UNITS = [("gpu", "GPU"), ("neuron", "Neuron"), ("cpu", "vCPU"), ("memory", "GiB")]


def _num(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


@register.filter
def amounts_text(amounts: dict | None) -> str:
    """{'gpu': 8, 'cpu': 192, 'memory': 2048} -> '8 GPU · 192 vCPU · 2048 GiB' (zeros left out)."""
    if not amounts:
        return ""
    parts = [(_num(amounts[key]), label) for key, label in UNITS if amounts.get(key, 0) > 0.0001]
    if not parts:
        return ""
    return format_html_join(mark_safe("<br>"), '<span class="amount">{} {}</span>', parts)


@register.filter
def duration(seconds) -> str:
    """7200 -> '2h', 5400 -> '1h 30m', 45 -> '45s'."""
    if not seconds:
        return ""
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    return " ".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v)


@register.filter
def job_size(job) -> str:
    """'2 × 8 GPU · 96 vCPU' : pods times the per-pod request, accelerators named by their kind."""
    it = job.assigned_instance_type or job.instance_type
    label = "Neuron" if it is not None and it.accelerator_resource == "neuron" else "GPU"
    parts = []
    if job.accelerators:
        parts.append(f"{job.accelerators} {label}")
    if job.vcpus:
        parts.append(f"{_num(job.vcpus)} vCPU")
    if not parts and job.memory_gib:
        parts.append(f"{_num(job.memory_gib)} GiB")
    return f"{job.pods} × " + " · ".join(parts)


@register.filter
def for_reader(reason, user) -> str:
    """A job's reason as this user may read it: other teams' jobs anonymised (scheduling.reasons)."""
    from scheduling.reasons import present

    return present(reason, user)
