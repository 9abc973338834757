"""An allocation or policy change runs the admission loop once it commits."""

from unittest import mock

import pytest

from quotas import services as quota_services

pytestmark = pytest.mark.django_db


def test_an_allocation_change_requests_an_admission_run_after_commit(
    team_a, p5, admin_user, django_capture_on_commit_callbacks
):
    with mock.patch("scheduling.loop._enqueue") as enqueue, django_capture_on_commit_callbacks(execute=True):
        quota_services.allocations_update(
            team=team_a, allocations={p5.name: {"accelerators": 16}}, user=admin_user, reason="grow"
        )
    assert enqueue.call_count >= 1
    assert all(call.args[0].startswith("config:") for call in enqueue.call_args_list)


def test_a_refused_change_requests_nothing(team_a, p5, admin_user, django_capture_on_commit_callbacks):
    from django.core.exceptions import ValidationError

    with (
        mock.patch("scheduling.loop._enqueue") as enqueue,
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(ValidationError),
    ):
        quota_services.allocations_update(team=team_a, allocations={p5.name: {"accelerators": -1}}, user=admin_user)
    enqueue.assert_not_called()


def test_a_policy_change_requests_an_admission_run(admin_user, django_capture_on_commit_callbacks):
    with mock.patch("scheduling.loop._enqueue") as enqueue, django_capture_on_commit_callbacks(execute=True):
        quota_services.cluster_policy_update(user=admin_user, task_prioritization="task-ranking")
    assert enqueue.call_count >= 1
