"""Celery tasks for deciding with evidence: thin wrappers that load, call a service and log."""

import logging

from celery import shared_task

log = logging.getLogger(__name__)


@shared_task(name="scheduling.whatif.tasks.replay_run_task", ignore_result=True)
def replay_run_task(replay_id: int) -> dict:
    """Run one stored what-if replay (its page polls the progress it writes)."""
    from scheduling.whatif.models import Replay, ReplayStatus
    from scheduling.whatif.services import replay_run

    replay = Replay.objects.filter(pk=replay_id, status=ReplayStatus.QUEUED).first()
    if replay is None:
        return {"skipped": "no such queued replay"}
    replay = replay_run(replay=replay)
    if replay.status == ReplayStatus.FAILED:
        log.warning("replay %s failed: %s", replay_id, replay.message)
    return {"status": replay.status}


@shared_task(name="scheduling.whatif.tasks.apply_due_requests_task", ignore_result=True)
def apply_due_requests_task() -> dict:
    """Approved quota requests whose date has come become the allocation (a version naming the request)."""
    from scheduling.whatif.requests import apply_due_requests

    return {"applied": apply_due_requests()}


@shared_task(name="scheduling.whatif.tasks.right_sizing_task", ignore_result=True)
def right_sizing_task() -> dict:
    """Weekly: read four weeks of usage and propose quota changes with their evidence."""
    from scheduling.whatif.advice import advise

    return {"proposals": len(advise())}
