"""figure_script: embed a figure already serialized to JSON, escaped exactly as Django's json_script does."""

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

register = template.Library()

_ESCAPES = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}


@register.filter
def figure_script(json_text: str, element_id: str):
    """Like json_script, for a string that is already JSON (serializing a figure twice costs time)."""
    return format_html(
        '<script id="{}" type="application/json">{}</script>', element_id, mark_safe(json_text.translate(_ESCAPES))
    )
