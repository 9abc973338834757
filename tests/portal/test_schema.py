"""The OpenAPI schema is the truth: schemathesis generates requests from it for every operation, sends them to
the live WSGI app with a token of each role, and fails on any 5xx or any response that does not match the
schema. Bounded (a few examples per operation and role) and deterministic (derandomized Hypothesis)."""

import os

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import response_schema_conformance

from quotas.models import ApiToken, ClusterPolicy, PriorityClass
from scheduling.models import Job

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

EXAMPLES = 5
NEGATIVE_EXAMPLES = (
    4  # per operation, as an admin  # per operation and role: under a minute for the whole API on a 2-core machine
)


@pytest.fixture
def world(users, team_a, team_b, p5, monkeypatch):
    from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

    monkeypatch.setattr(UserRateThrottle, "rate", "100000/minute", raising=False)
    monkeypatch.setattr(AnonRateThrottle, "rate", "100000/minute", raising=False)
    ClusterPolicy.load()
    PriorityClass.objects.create(name="training", weight=100)
    Job.objects.create(team=team_a, submitted_by=users["scientist"], name="train", image="pytorch:2", accelerators=1)
    roles = ("admin", "manager", "scientist")
    return {role: ApiToken.issue(user=users[role], name="schemathesis")[1] for role in roles}


@pytest.fixture
def keep_connection():
    """Django closes the database connection when a WSGI request ends; the test's transaction must survive
    (Django's own test client does the same)."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def operations():
    schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    schema.app = WSGIHandler()
    return [result.ok() for result in schema.get_all_operations()]


def test_every_operation_for_every_role_matches_the_schema(world, keep_connection):
    failures = _run(world, GenerationMode.POSITIVE, EXAMPLES)
    assert not failures, "\n".join(failures)


def test_malformed_requests_are_refused_never_a_5xx(world, keep_connection):
    """Negative examples (wrong types, out-of-range numbers, missing fields) as an admin, who reaches every
    write: each must be answered, never with a 5xx."""
    failures = _run({"admin": world["admin"]}, GenerationMode.NEGATIVE, NEGATIVE_EXAMPLES)
    assert not failures, "\n".join(failures)


def _run(tokens: dict, mode: GenerationMode, examples: int) -> list[str]:
    failures = []
    only = os.environ.get("SCHEMA_ONLY", "")  # e.g. SCHEMA_ONLY="POST /api/jobs/" while debugging
    for operation in operations():
        if only and only not in operation.label:
            continue
        for role, key in tokens.items():
            check = _checker(operation, {"Authorization": f"Token {key}", "Host": "localhost"}, mode, examples)
            try:
                check()
            except Unsatisfiable:
                pass  # nothing to make malformed (an operation without parameters or body)
            except BaseExceptionGroup as group:  # schemathesis reports its failures as a group
                failures.append(f"{role} {operation.label}: {_summary(group)}")
            except Exception as exc:
                failures.append(f"{role} {operation.label}: {_summary(exc)}")
    return failures


def _checker(operation, headers, mode, examples):
    @settings(
        max_examples=examples, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case):
        response = case.call(headers=headers)
        case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])

    return check


def _summary(exc) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = [line for line in lines if "violates" in line or "Server error" in line or "is not" in line]
    curl = [line for line in lines if line.startswith("curl ")]
    return " | ".join((detail[:2] or lines[:2]) + curl[:1])
