"""The portal's one settings module: everything that varies comes from the environment, read once here.

Defaults are the embedded ones (a SQLite file and a file-system broker under var/), so the portal runs on
a laptop with nothing else installed; DATABASE_URL and REDIS_URL switch to PostgreSQL and Redis.
With DEBUG off (production mode) a missing SECRET_KEY stops start-up with a clear message.
"""

import secrets
from datetime import timedelta
from pathlib import Path

import environ
from csp.constants import NONCE
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(environ.Env().str("PORTAL_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

env = environ.Env()
if (BASE_DIR / ".env").exists():
    env.read_env(BASE_DIR / ".env")

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="")
# Production mode (DEBUG off) needs a real secret: the web server and the Celery worker refuse to start
# without one, and every command that runs Django's system checks stops with error portal.E001
# (portal/checks.py). Pure commands that sign nothing, such as `simulate`, still run.
SECRET_KEY_MISSING = not SECRET_KEY and not DEBUG
if not SECRET_KEY:
    SECRET_KEY = "insecure-ephemeral-" + secrets.token_urlsafe(40)

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "csp",  # Content-Security-Policy header and per-request nonces
    "axes",  # login throttling (failed attempts per user and per address)
    "django_tables2",
    "quotas",
    "scheduling",
    "scheduling.usage",
    "scheduling.kube",
    "scheduling.whatif",
    "portal",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "portal.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",  # Content-Security-Policy (below)
    "axes.middleware.AxesMiddleware",  # last: answers a locked-out login with the lockout page
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context_processors.navigation",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'portal.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and beat share the file: WAL lets readers run beside the one writer, IMMEDIATE
    # transactions take the write lock up front instead of failing half-way with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "quotas.User"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Login throttling (django-axes), for the login page and the Django admin's: after AXES_FAILURE_LIMIT
# failed attempts for one username, or from one address, that username (or address) is locked out for
# AXES_COOLOFF_MINUTES. An admin lifts a lockout early in Django admin (Axes > Access attempts: delete) or with
# `manage.py axes_reset_username <name>` / `axes_reset_ip <address>`.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("AXES_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_IPWARE_PROXY_COUNT = env.int("AXES_PROXY_COUNT", default=0) or None  # proxies in front (X-Forwarded-For)
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG and env.bool("STATIC_MANIFEST", default=True)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = env.bool("WHITENOISE_USE_FINDERS", default=True)
WHITENOISE_AUTOREFRESH = DEBUG

# Production hardening; each can be relaxed by environment for a plain-HTTP demo.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy (django-csp): scripts only from this site (or an inline one carrying the request's
# nonce, {{ request.csp_nonce }}); no plugins, no framing, forms post only here. Styles allow inline because
# Plotly and htmx set style attributes; the portal's own templates have no inline script or event handler.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", NONCE],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="portal@localhost")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "quotas.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "portal.api.BoundedPagination",  # limit <= bounds.MAX_PAGE_SIZE
    "DEFAULT_PARSER_CLASSES": [
        "portal.api.BoundedJSONParser",  # depth-limited JSON
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "portal.api.exception_handler",
    # Per signed-in user and per address for anonymous calls; failed tokens are limited per address in
    # quotas.authentication (they fail before throttles run).
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env.str("API_THROTTLE_ANON", default="60/minute"),
        "user": env.str("API_THROTTLE_USER", default="1200/minute"),
        "token_failures": env.str("API_THROTTLE_TOKEN_FAILURES", default="10/minute"),
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU quota portal API",
    "DESCRIPTION": "Teams, compute allocations, jobs, usage and reports. Authenticate with a session or "
    "with `Authorization: Token <key>` (create a token on your profile page).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No request leaves the site: Swagger UI would ask an outside validator for a badge, ReDoc for fonts.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "REDOC_UI_SETTINGS": {
        "theme": {
            "typography": {"fontFamily": "system-ui, sans-serif", "headings": {"fontFamily": "system-ui, sans-serif"}}
        }
    },
    "COMPONENT_SPLIT_REQUEST": True,
    # One enum per choice set used by several fields (job state, from/to state of its events).
    "ENUM_NAME_OVERRIDES": {"JobStateEnum": "scheduling.models.JobState"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.schema.any_of_instead_of_one_of",
    ],
}

# Celery: Redis when REDIS_URL is set, else kombu's file-system transport. The file-system broker is
# embedded (no server to install) and works across processes on one host: web, worker and beat each
# read and write message files under var/broker with atomic renames and file locks.
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
    CELERY_BROKER_TRANSPORT_OPTIONS = {}
else:
    _broker_dir = VAR_DIR / "broker"
    for _sub in ("out", "processed"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),  # kombu's default is ./control in the working directory
        "store_processed": False,
    }
# Rendered chart pages and the admission loop's flags: shared across processes through Redis when there is
# one, else each process keeps its own in memory.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# The admission loop and its cluster.
CLUSTER_BACKEND = env.str("CLUSTER_BACKEND", default="simulated")  # "simulated" | "kubernetes"
ADMISSION_INTERVAL = timedelta(seconds=env.float("ADMISSION_INTERVAL_SECONDS", default=5))
# "process": `manage.py scheduler` keeps the engine warm and admits (scheduling/warm.py); "celery": every
# request queues a cold run on the Celery workers, and beat runs one every ADMISSION_INTERVAL_SECONDS.
ADMISSION_SCHEDULER = env.str("ADMISSION_SCHEDULER", default="process")
if ADMISSION_SCHEDULER not in ("process", "celery"):
    raise ImproperlyConfigured(f"ADMISSION_SCHEDULER must be 'process' or 'celery', not {ADMISSION_SCHEDULER!r}")
SIMULATED_TIME_SCALE = env.float("SIMULATED_TIME_SCALE", default=1.0)
SIMULATED_FAILURE_RATE = env.float("SIMULATED_FAILURE_RATE", default=0.03)
DEMO_TRAFFIC = env.bool("DEMO_TRAFFIC", default=False)
KUBECONFIG = env.str("KUBECONFIG", default="")  # empty: in-cluster configuration, else ~/.kube/config
KUBE_CONTEXT = env.str("KUBE_CONTEXT", default="")
KUBE_ADMISSION_MODE = env.str("KUBE_ADMISSION_MODE", default="portal")  # "portal" | "kueue"
KUBE_REQUEST_TIMEOUT_SECONDS = env.float("KUBE_REQUEST_TIMEOUT_SECONDS", default=10.0)
KUBE_WATCH_SECONDS = env.float("KUBE_WATCH_SECONDS", default=1.0)
KUBE_PORTAL_MODE_QUEUE_LABEL = env.bool("KUBE_PORTAL_MODE_QUEUE_LABEL", default=False)

# Usage sampling and reports.
USAGE_SAMPLE_SECONDS = env.float("USAGE_SAMPLE_SECONDS", default=60.0)
USAGE_RAW_RETENTION_DAYS = env.int("USAGE_RAW_RETENTION_DAYS", default=14)
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")  # empty: /metrics is open only with METRICS_PUBLIC
METRICS_PUBLIC = env.bool("METRICS_PUBLIC", default=False)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"expected_forbidden": {"()": "portal.logging.ExpectedForbidden"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
        "django.request": {"filters": ["expected_forbidden"]},
    },
}
