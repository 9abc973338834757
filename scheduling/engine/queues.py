"""Workloads as the scheduler tracks them, and each team's queue.

A team's queue is split into buckets of identical workloads (same shape, instance type and priority).
Only a bucket's head is ever tried: if it cannot be admitted, nothing behind it in the bucket can be
either, so best-effort FIFO costs one attempt per bucket instead of one per pending workload.
"""

from __future__ import annotations

import heapq

PENDING, RUNNING, FINISHED, WAITING = "pending", "running", "finished", "waiting"  # waiting = not submitted


class Job:
    __slots__ = (
        "name", "seq", "team", "per_pod", "total", "nz", "pods", "priority", "submit", "want", "duration",
        "flavor", "nodes", "admitted_at", "first_admitted_at", "finished_at", "preemptions", "state",
        "key", "sig", "run",
    )  # fmt: skip

    def __init__(self, name, seq, team, per_pod, pods, priority, submit, want, duration=None):
        self.name = name
        self.seq = seq
        self.team = team
        self.per_pod = per_pod
        self.pods = pods
        self.total = [amount * pods for amount in per_pod]
        self.nz = tuple(r for r, amount in enumerate(self.total) if amount > 0)
        self.priority = priority
        self.submit = submit
        self.want = want  # flavor index, or None for any type the team has quota on
        self.duration = duration
        self.flavor = None
        self.nodes = None
        self.admitted_at = None
        self.first_admitted_at = None
        self.finished_at = None
        self.preemptions = 0
        self.state = WAITING
        self.key = None
        self.sig = (tuple(per_pod), pods, priority, want, duration)  # duration: backfill treats them apart
        self.run = 0  # bumped at each admission, so a stale finish event can be recognised


class TeamQueue:
    def __init__(self, ranking: bool):
        self.ranking = ranking
        self.buckets: dict[tuple, list] = {}
        self.size = 0

    def push(self, job: Job) -> None:
        job.key = (-job.priority, job.submit, job.seq) if self.ranking else (job.submit, job.seq)
        heapq.heappush(self.buckets.setdefault(job.sig, []), (job.key, job))
        self.size += 1

    def heads(self) -> list[Job]:
        """The head of every bucket, in queue order."""
        if len(self.buckets) == 1:
            for bucket in self.buckets.values():
                return [bucket[0][1]]
        return [entry[0][1] for entry in sorted(self.buckets.values(), key=lambda b: b[0][0])]

    def first(self) -> Job:
        """The head of the queue: the first pending workload in queue order."""
        if len(self.buckets) == 1:
            for bucket in self.buckets.values():
                return bucket[0][1]
        return min(self.buckets.values(), key=lambda b: b[0][0])[0][1]

    def remove(self, job: Job) -> None:
        """Remove `job` wherever it stands in its bucket (undoing an eviction)."""
        bucket = self.buckets[job.sig]
        bucket.remove((job.key, job))
        heapq.heapify(bucket)
        if not bucket:
            del self.buckets[job.sig]
        self.size -= 1

    def pop(self, job: Job) -> None:
        """Remove `job`, which must be the head of its bucket."""
        bucket = self.buckets[job.sig]
        heapq.heappop(bucket)
        if not bucket:
            del self.buckets[job.sig]
        self.size -= 1

    def jobs(self):
        for bucket in self.buckets.values():
            for _, job in bucket:
                yield job
