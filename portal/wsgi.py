import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_wsgi_application()

from portal.checks import refuse_to_serve_without_secret  # noqa: E402  (needs settings loaded)

refuse_to_serve_without_secret()
