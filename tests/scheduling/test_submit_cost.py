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


def test_submit_reads_and_writes_in_one_transaction_even_when_defaults_need_the_home_type(
    scientist, team_a, submit, priorities
):
    submit(scientist, team_a, name="warm-up")
    with CaptureQueriesContext(connection) as captured:  # no instance type and no memory: the home type's default
        submit(scientist, team_a, name="defaults", accelerators=2, vcpus=None, memory_gib=None, priority_class="low")
    sql = statements(captured)
    # team (with membership and home type), instance types, priority class, INSERT job, INSERT event
    assert len(sql) <= 5, sql
    assert [q["sql"] for q in captured.captured_queries][0].startswith("SAVEPOINT")  # reads inside the transaction


# who asks -> the error on the team field, or None when the job is stored
WHO_MAY_SUBMIT = [
    ("admin_user", None),
    ("manager_user", "you are not a member of team-a"),
    ("scientist", None),
    ("other_scientist", "unknown team 'team-a'"),
]


@pytest.mark.parametrize("who, error", WHO_MAY_SUBMIT, ids=[w[0] for w in WHO_MAY_SUBMIT])
def test_who_may_submit_for_a_team_follows_the_visibility_rule(who, error, request, team_a, team_b, submit):
    from django.core.exceptions import ValidationError

    user = request.getfixturevalue(who)
    if error is None:
        assert submit(user, team_a).team == team_a
        return
    with pytest.raises(ValidationError) as raised:
        submit(user, team_a)
    assert error in " ".join(raised.value.message_dict["team"])
