# The GPU quota portal: one image for every role (web, worker, beat, scheduler); the command picks the role.
#   docker build -t gpu-quota-portal .
#   docker compose up          (compose.yaml: PostgreSQL, Redis and every role)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    PORTAL_VAR_DIR=/var/lib/portal DEBUG=false
WORKDIR /app

COPY pyproject.toml README.md ./
COPY portal ./portal
COPY quotas ./quotas
COPY scheduling ./scheduling
COPY templates ./templates
COPY static ./static
COPY manage.py ./
RUN pip install -e . \
 && useradd --system --uid 10001 --home-dir /var/lib/portal portal \
 && mkdir -p /var/lib/portal && chown portal /var/lib/portal \
 && SECRET_KEY=build-only-not-used-at-runtime python manage.py collectstatic --noinput -v0 \
 && chown -R portal /var/lib/portal

USER portal
EXPOSE 8000
# The web role by default; compose.yaml and deploy/portal.yaml override the command for the other roles.
CMD ["gunicorn", "portal.wsgi", "--bind", "0.0.0.0:8000", "--workers", "2", "--access-logfile", "-"]
