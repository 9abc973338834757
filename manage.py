#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    try:
        from django.core.management import execute_from_command_line
    except ImportError as exc:
        raise SystemExit(
            "Django is not installed here: run ./run.sh once, or activate .venv (source .venv/bin/activate)."
        ) from exc
    try:
        execute_from_command_line(sys.argv)
    except Exception as exc:  # configuration errors and outages: one line, not a traceback (--traceback: all of it)
        from django.core.exceptions import ImproperlyConfigured

        if isinstance(exc, ImproperlyConfigured):
            raise SystemExit(f"configuration error: {exc}") from None
        from portal.dependencies import one_line, unavailable

        if unavailable(exc) and "--traceback" not in sys.argv:
            raise SystemExit(f"error: {one_line(exc)}") from None
        raise


if __name__ == "__main__":
    main()
