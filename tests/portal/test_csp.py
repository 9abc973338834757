"""Content-Security-Policy: every page says where script may come from; no template carries inline script
or an inline event handler (they would be blocked)."""

import pathlib
import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

TEMPLATES = pathlib.Path(__file__).resolve().parents[2] / "templates"


def test_pages_send_a_content_security_policy(admin_user, client_for):
    for url in ("/", "/login/", "/jobs/", "/usage/", "/api/docs/"):
        client = Client() if url == "/login/" else client_for(admin_user)
        policy = client.get(url)["Content-Security-Policy"]
        assert "script-src 'self'" in policy, url
        assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
        assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy


def test_no_template_has_inline_script_or_handlers():
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert "src=" in tag or "nonce=" in tag or "application/json" in tag, (path, tag)
        assert not re.search(r"\son[a-z]+=\"", text), path


def test_swagger_ui_runs_without_inline_script(admin_user, client_for):
    page = client_for(admin_user).get("/api/docs/").content.decode()
    for tag in re.findall(r"<script\b[^>]*>", page):
        assert "src=" in tag or "nonce=" in tag, tag
