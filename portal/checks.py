"""Start-up checks: production mode needs a secret key."""

import sys

from django.conf import settings
from django.core.checks import Error, register

MISSING_SECRET = (
    "SECRET_KEY is not set. Production mode (DEBUG off) needs a secret: export SECRET_KEY=<50+ random "
    "characters>, or set DEBUG=true for local development."
)


@register()
def secret_key_is_set(app_configs, **kwargs):
    if settings.SECRET_KEY_MISSING:
        return [Error(MISSING_SECRET, id="portal.E001")]
    return []


def refuse_to_serve_without_secret():
    """Called where the web server and the worker start: one clear line, then exit."""
    if settings.SECRET_KEY_MISSING:
        sys.stderr.write(f"configuration error: {MISSING_SECRET}\n")
        raise SystemExit(1)
