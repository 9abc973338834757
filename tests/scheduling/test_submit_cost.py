"""Submitting a job is cheap: a handful of queries whatever the cluster holds."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


def statements(captured) -> list[str]:
    """The queries a request runs (the test's own transaction turns BEGIN/COMMIT into savepoints)."""
    return [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]


def test_submit_runs_a_handful_of_queries(scientist, team_a, submit, priorities):
    submit(scientist, team_a, name="warm-up")
    for i in range(30):  # the count does not grow with the number of jobs
        submit(scientist, team_a, name=f"more-{i}", priority_class="low")
    with CaptureQueriesContext(connection) as captured:
        submit(scientist, team_a, name="second", priority_class="high", instance_type="ml.p5.48xlarge")
    # team (with membership), instance types, priority class, INSERT job, INSERT event
    assert len(statements(captured)) <= 5, statements(captured)
