"""The admission loop's pass when Kueue admits (CLUSTER_BACKEND=kubernetes, KUBE_ADMISSION_MODE=kueue).

The portal's engine stays out of the way. Every queued job is submitted, suspended, to its team's
LocalQueue; Kueue admits its Workload and unsuspends the Job. The loop reads back what happened: a Job
that runs is admitted and running in the portal, one that finishes or fails is final, and one that Kueue
suspends again (an eviction) goes back to the queue as preempted. Waiting jobs show Kueue's own reason
and queue position, as stored by the Workload status sync (scheduling.kube).
"""

import logging

from django.db import transaction
from django.utils import timezone

from scheduling.backends.base import ClusterUnreachable
from scheduling.models import ACTIVE_STATES, QUEUED_STATES, Job, JobEvent, JobState

log = logging.getLogger(__name__)

SUBMITTED = "submitted to Kueue; waiting for Kueue to admit it"


def kueue_pass(*, backend, now=None) -> dict:
    """One pass: submit new jobs, apply what the cluster did, copy Kueue's reasons. Returns counts."""
    now = now or timezone.now()
    counts = {"submitted": _submit_new(backend), "admitted": 0, "preempted": 0, "finished": 0}
    jobs = list(
        Job.objects.filter(state__in=QUEUED_STATES + ACTIVE_STATES)
        .exclude(backend_ref="")
        .select_related("team", "instance_type", "assigned_instance_type", "priority_class")
    )
    try:
        observations = {obs.job_id: obs for obs in backend.observe(jobs, now=now)} if jobs else {}
    except ClusterUnreachable as exc:
        log.warning("cluster unreachable in Kueue mode: %s", exc)
        observations = {}
    with transaction.atomic():
        for job in jobs:
            obs = observations.get(job.pk)
            outcome = _apply(job, obs.state, obs.at, obs.reason) if obs is not None else None
            if outcome is not None:
                counts[outcome] += 1
        _copy_kueue_reasons()
        counts["preempted"] += _requeue_evicted(now)
    return counts


def _submit_new(backend) -> int:
    submitted = 0
    for job in Job.objects.filter(state__in=QUEUED_STATES, backend_ref="").select_related(
        "team", "instance_type", "priority_class"
    ):
        try:
            ref = backend.start(job, instance_type=job.instance_type.name if job.instance_type_id else None, nodes=None)
        except ClusterUnreachable as exc:
            Job.objects.filter(pk=job.pk, backend_ref="").update(reason=f"cluster unreachable: {exc}"[:500])
            continue
        submitted += Job.objects.filter(pk=job.pk, backend_ref="").update(backend_ref=ref, reason=SUBMITTED)
    return submitted


def _apply(job: Job, state: str, at, reason: str) -> str | None:
    at = max(at, job.submitted_at)  # Kubernetes times have whole seconds: never before the submission
    if state == JobState.RUNNING and job.state in QUEUED_STATES:
        Job.objects.filter(pk=job.pk, state=job.state).update(
            state=JobState.RUNNING, admitted_at=at, started_at=at, reason="admitted by Kueue; running"
        )
        JobEvent.objects.bulk_create(
            [
                JobEvent(job=job, at=at, from_state=job.state, to_state=JobState.ADMITTED, reason="admitted by Kueue"),
                JobEvent(job=job, at=at, from_state=JobState.ADMITTED, to_state=JobState.RUNNING, reason="running"),
            ]
        )
        return "admitted"
    if state in (JobState.SUCCEEDED, JobState.FAILED) and job.state in ACTIVE_STATES:
        words = reason or ("finished successfully" if state == JobState.SUCCEEDED else "failed on the cluster")
        Job.objects.filter(pk=job.pk, state=job.state).update(state=state, finished_at=at, reason=words)
        JobEvent.objects.create(job=job, at=at, from_state=job.state, to_state=state, reason=words)
        return "finished"
    return None  # nothing new for the portal


def _requeue_evicted(now) -> int:
    """Running jobs whose Workload Kueue evicted (it suspends the Job) go back to the queue as preempted."""
    from scheduling.kube.models import WorkloadStatus

    evicted = WorkloadStatus.objects.filter(evicted=True, job__state=JobState.RUNNING).select_related("job")
    count = 0
    for status in evicted:
        job = status.job
        why = f"evicted by Kueue: {status.reason or 'preempted'}"
        if Job.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
            state=JobState.PENDING, reason=why, preemption_count=job.preemption_count + 1
        ):
            JobEvent.objects.bulk_create(
                [
                    JobEvent(job=job, at=now, from_state=JobState.RUNNING, to_state=JobState.PREEMPTED, reason=why),
                    JobEvent(job=job, at=now, from_state=JobState.PREEMPTED, to_state=JobState.PENDING, reason=why),
                ]
            )
            count += 1
    return count


def _copy_kueue_reasons() -> None:
    from scheduling.kube.models import WorkloadStatus

    for status in WorkloadStatus.objects.filter(job__state__in=QUEUED_STATES).exclude(reason=""):
        place = f" (position {status.position} in {status.local_queue})" if status.position else ""
        Job.objects.filter(pk=status.job_id, state__in=QUEUED_STATES).update(reason=f"Kueue: {status.reason}{place}")
