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


@register.inclusion_tag("usage/_digest_form.html", takes_context=True)
def digest_form(context):
    """The profile page's digest choice, with the user's current one."""
    from scheduling.usage.models import DigestFrequency, DigestSubscription

    user = context["request"].user
    sub = DigestSubscription.objects.filter(user=user).first()
    return {
        "choices": DigestFrequency.choices,
        "current": sub.frequency if sub else DigestFrequency.OFF,
        "last_sent_at": sub.last_sent_at if sub else None,
        "user": user,
        "csrf_token": context.get("csrf_token"),
    }
