from django import template

register = template.Library()

UNITS = [("gpu", "GPU"), ("neuron", "Neuron"), ("cpu", "vCPU"), ("memory", "GiB")]


def _num(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


@register.filter
def amounts_text(amounts: dict | None) -> str:
    """{'gpu': 8, 'cpu': 192, 'memory': 2048} -> '8 GPU · 192 vCPU · 2048 GiB' (zeros left out)."""
    if not amounts:
        return ""
    parts = [f"{_num(amounts[key])} {label}" for key, label in UNITS if amounts.get(key, 0) > 0.0001]
    return " · ".join(parts)
