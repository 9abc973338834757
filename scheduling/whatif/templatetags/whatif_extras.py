from django import template

register = template.Library()


@register.filter
def measure(value, unit: str) -> str:
    """A figure in its unit: durations as h/min/s, hours with one decimal, percentages, counts."""
    if value is None:
        return "—"
    if unit == "duration":
        return duration(value)
    if unit == "hours":
        return f"{value:,.1f} h"
    if unit == "pct":
        return f"{value:.1f} %"
    return f"{value:,.0f}"


@register.filter
def signed_measure(value, unit: str) -> str:
    if value is None:
        return "—"
    text = measure(abs(value), unit)
    if not any(ch in "123456789" for ch in text):
        return "±0"  # a change too small to show
    return ("+" if value > 0 else "−") + text


@register.filter
def duration(seconds) -> str:
    if seconds is None:
        return "—"
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"
