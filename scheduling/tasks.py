"""Celery tasks: thin wrappers that call a service and log. The beat schedule is in portal/celery.py."""

import logging

from celery import shared_task
from django.conf import settings

log = logging.getLogger(__name__)


@shared_task(name="scheduling.tasks.admission_tick", ignore_result=True)
def admission_tick(trigger: str = "beat") -> dict:
    """One admission run: snapshot, engine, decisions applied in one transaction, then the cluster told."""
    from scheduling.loop import admission_run

    run = admission_run(trigger=trigger, wait=False)
    if run is None:
        return {"skipped": "another run holds the lock; a new one is queued"}
    if run.error:
        log.error("admission run failed: %s", run.error)
    return {"admitted": run.admitted, "preempted": run.preempted, "error": run.error}


@shared_task(name="scheduling.tasks.cluster_tick", ignore_result=True)
def cluster_tick(retry_starts: bool = False) -> dict:
    """Advance the cluster: apply what it reports (running, finished); a finish asks for an admission run.

    Beat's periodic tick (retry_starts) also retries starts and stops that an unreachable cluster refused.
    The simulated cluster's wake-ups at each job's end only observe, and with the scheduler process they
    leave even that to its next pass, which they wake. While a scheduler process leads, beat's tick leaves
    observing to it too (its passes observe the cluster at least once a second): observing every running
    job here as well cost a worker a query of them all every 2 s, and a wait for the scheduler's lock.
    """
    from scheduling.loop import carry_out, cluster_sync, wake_scheduler
    from scheduling.warm import scheduler_leads

    process = settings.ADMISSION_SCHEDULER == "process"
    if not retry_starts and process:
        wake_scheduler("cluster")  # the scheduler observes the cluster in its next pass: no second writer
        return {"finished": None}
    finished = None if process and scheduler_leads() else cluster_sync()
    if retry_starts:
        carry_out()
    return {"finished": finished}


@shared_task(name="scheduling.tasks.carry_out_tick", ignore_result=True)
def carry_out_tick() -> dict:
    """Start and stop on the cluster what the scheduler process decided (off its path: cluster calls are slow)."""
    from scheduling.loop import carry_out, carry_out_started

    carry_out_started()
    carry_out()
    return {}


@shared_task(name="scheduling.tasks.demo_traffic_tick", ignore_result=True)
def demo_traffic_tick() -> dict:
    """Submit the next slice of the replayed Philly trace for the demo scientists (only with DEMO_TRAFFIC)."""
    if not settings.DEMO_TRAFFIC:
        return {"submitted": 0}
    from scheduling.demo_traffic import demo_traffic_step

    return {"submitted": demo_traffic_step()}
