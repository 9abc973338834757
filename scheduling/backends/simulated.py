"""The simulated cluster: the embedded default backend, a cluster that lives in the jobs table.

A job the loop starts is placed on the nodes the engine chose (checked against the node groups) and
runs from that instant: its name on the cluster carries the start time (`...-a0@1732489200.125`), which
`observe` reports as the start, as Kubernetes reports a pod's own start time, however late the portal looks.
It finishes `expected_duration_s x SIMULATED_TIME_SCALE` seconds after it started;
a fraction SIMULATED_FAILURE_RATE of jobs fails part-way instead. Which jobs fail, and when, is a
hash of the job id, so a test or a demo replays the same way every time. Nothing is kept in memory: web,
worker and beat processes all see the same cluster, and a restart loses nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import time
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db.models import Sum

from quotas.models import InstanceType
from scheduling.backends.base import ClusterBackend, InventoryItem, Observation

DEFAULT_DURATION_S = 600  # a job submitted without an expected duration runs this long
WAKE_UP_WITHIN_S = 120  # finishes sooner than this get their own cluster tick; later ones wait for beat
WAKE_UP_SLOT_S = 0.05
# An end is looked at this long after it (more than loop.ALARM_SLACK_S, the margin within which a wake-up counts
# as due: a look before the end would not see it, and the next look comes only a second later).
WAKE_UP_AFTER_END_S = 0.003


def unit_hash(job_id: int, salt: str) -> float:
    """A number in [0, 1) fixed by the job id."""
    digest = hashlib.sha256(f"{salt}:{job_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def runtime_s(job) -> float:
    """How long the simulated cluster runs this job, in real seconds."""
    return (job.expected_duration_s or DEFAULT_DURATION_S) * settings.SIMULATED_TIME_SCALE


def fate(job) -> tuple[str, float]:
    """('succeeded' | 'failed', seconds after start): deterministic per job id."""
    runtime = runtime_s(job)
    if unit_hash(job.pk, "fail") < settings.SIMULATED_FAILURE_RATE:
        return "failed", runtime * (0.2 + 0.6 * unit_hash(job.pk, "when"))
    return "succeeded", runtime


def started_on_cluster(backend_ref: str) -> datetime | None:
    """The start instant a simulated job's name carries (None for names without one)."""
    _, at, stamp = backend_ref.rpartition("@")
    try:
        return datetime.fromtimestamp(float(stamp), tz=UTC) if at else None
    except (ValueError, OverflowError):
        return None


class SimulatedCluster(ClusterBackend):
    name = "simulated"

    NODE_COUNTS_FOR_S = 1.0  # a batch of starts reads the node counts once

    def __init__(self):
        self._node_counts: tuple[float, dict[str, int]] | None = None

    def _node_count(self, instance_type: str) -> int:
        now = time.monotonic()
        if self._node_counts is None or now - self._node_counts[0] > self.NODE_COUNTS_FOR_S:
            types = InstanceType.objects.annotate(n=Sum("node_groups__node_count")).values_list("name", "n")
            self._node_counts = (now, {name: n or 0 for name, n in types})
        return self._node_counts[1].get(instance_type, 0)

    def start(self, job, *, instance_type: str, nodes: list[int] | None) -> str:
        node_count = self._node_count(instance_type)
        bad = [n for n in nodes or [] if not 0 <= n < node_count]
        if bad:
            raise ValueError(f"job #{job.pk}: {instance_type} has {node_count} nodes, no node {bad[0]}")
        # one name per attempt, with the instant it started (to the millisecond: the end is read back from it)
        started = round(time.time(), 3)
        self._wake_up_at(started + fate(job)[1])  # when it ends: succeeds, or fails part-way
        return f"sim/{job.team.namespace}/{job.name}-{job.pk}-a{job.preemption_count}@{started:.3f}"

    def stop(self, job, *, reason: str, preempted: bool) -> None:
        """Nothing to tear down: the simulated pods exist only as the job's state in the database."""

    def observe(self, jobs, *, now: datetime) -> list[Observation]:
        """A job started since the last look is reported running from when it started, and also ended when
        its end has passed meanwhile (two observations, in order)."""
        out = []
        for job in jobs:
            if not job.backend_ref:
                continue
            started_at = job.started_at if job.state == "running" else None
            if job.state == "admitted":
                pods = f"{job.pods} pod{'s' if job.pods > 1 else ''}"
                started_at = min(started_on_cluster(job.backend_ref) or now, now)
                where = job.backend_ref.partition("@")[0]
                out.append(Observation(job.pk, "running", started_at, f"running: {pods} on {where}"))
            if started_at is not None:
                outcome, after = fate(job)
                end = started_at + timedelta(seconds=after)
                if end <= now:
                    reason = (
                        "finished successfully"
                        if outcome == "succeeded"
                        else "failed: the simulated cluster's container exited with code 1 (injected failure)"
                    )
                    out.append(Observation(job.pk, outcome, end, reason))
        return out

    def inventory(self) -> list[InventoryItem]:
        types = InstanceType.objects.annotate(n=Sum("node_groups__node_count"))
        return [
            InventoryItem(
                instance_type=it.name,
                node_count=it.n or 0,
                accelerator_resource=it.accelerator_resource,
                accelerators=it.accelerators,
                vcpus=it.vcpus,
                memory_gib=it.memory_gib,
            )
            for it in types
        ]

    @staticmethod
    def _wake_up_at(end: float) -> None:
        """Short jobs get a cluster tick right when they end, so their quota is given back promptly.

        Started by the scheduler process, the tick is a deadline of that process's own wait
        (loop.wake_cluster_at). Elsewhere it is a Celery task; ends that fall in the same 50 ms share one
        (a Redis flag per slot), so a thousand small jobs do not become a thousand ticks.
        """
        if settings.CELERY_TASK_ALWAYS_EAGER or end - time.time() > WAKE_UP_WITHIN_S:
            return
        from scheduling.loop import _redis_client, wake_cluster_at
        from scheduling.tasks import cluster_tick

        due = end + WAKE_UP_AFTER_END_S
        if wake_cluster_at(due):
            return  # started by the scheduler process, which wakes itself then
        slot = math.ceil(due / WAKE_UP_SLOT_S)
        with contextlib.suppress(Exception):  # the broker is down: beat's tick will notice the finish
            client = _redis_client()
            if client is not None and not client.set(f"portal:cluster:wake:{slot}", 1, nx=True, ex=300):
                return
            cluster_tick.apply_async(countdown=slot * WAKE_UP_SLOT_S - time.time())
