"""Demo traffic: the Philly trace replayed, compressed in time, by the demo scientists of quotas/demo.py.

Each beat tick submits the trace rows whose (compressed) arrival time has come, through the same service a
scientist uses. Philly's virtual clusters map onto the demo teams; a job's GPUs become pods on an instance type
the team has quota on (whole nodes for big jobs), with the vCPUs and memory that go with them; priority classes
follow the team and the job's length. The first tick submits a burst so that a newcomer sees queues, borrowing
and preemptions within a minute. Progress is read back from the jobs themselves (name suffix -r<row>), so
every worker and a restart agree on where the replay is.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path

from django.core.exceptions import ValidationError
from django.utils import timezone

from quotas.models import ComputeAllocation, Role, Sharing, Team, User
from scheduling.models import QUEUED_STATES, Job
from scheduling.services import JobRequest, job_submit

TRACE = Path(__file__).resolve().parent / "data" / "philly_sample.csv"
ARRIVAL_COMPRESSION = 3000  # one trace hour of arrivals in 1.2 s: about one job a second
DURATION_COMPRESSION = 60  # one trace hour of running in one minute
MIN_DURATION_S, MAX_DURATION_S = 15, 900
OPENING_BURST = 60  # rows submitted at once on the first tick
MAX_QUEUED = 150  # stop adding while this many demo jobs wait (a slow machine must not drown)
ROW = re.compile(r"-r(\d{5})$")

# Philly virtual cluster -> demo team (the busiest VCs first; the rest spread by hash)
VC_TEAMS = {
    "6214e9": "research",
    "11cb48": "llm-pretraining",
    "6c71a0": "vision",
    "b436b2": "speech",
    "103959": "recsys",
    "ee9e8c": "inference",
    "0e4a51": "vision",
    "ed69ec": "speech",
}
TEAM_PRIORITY = {
    "inference": "inference-priority",
    "llm-pretraining": "training-priority",
    "vision": "fine-tuning-priority",
    "speech": "training-priority",
    "recsys": "training-priority",
    "research": "experimentation-priority",
}
MODELS = ["resnet", "bert", "llama", "whisper", "vit", "gpt", "t5", "clip", "dlrm", "wav2vec"]


@dataclass
class TraceRow:
    index: int
    offset_s: float  # seconds after the first row
    duration_s: float
    gpus: int
    vc: str


@cache
def trace() -> list[TraceRow]:
    with TRACE.open() as f:
        raw = list(csv.DictReader(f))
    t0 = datetime.fromisoformat(raw[0]["timestamp"])
    return [
        TraceRow(
            index=i,
            offset_s=(datetime.fromisoformat(r["timestamp"]) - t0).total_seconds(),
            duration_s=float(r["duration"]),
            gpus=int(r["num_gpus"]),
            vc=r["cluster"],
        )
        for i, r in enumerate(raw)
    ]


def team_for(vc: str) -> str:
    if vc in VC_TEAMS:
        return VC_TEAMS[vc]
    teams = sorted(set(VC_TEAMS.values()))
    return teams[int(vc, 16) % len(teams)]


def shape(row: TraceRow, allocations: list[ComputeAllocation], team: str = "") -> dict | None:
    """Instance type, pods and per-pod sizes for a trace job on one of the team's instance types."""
    gpu_types = [a.instance_type for a in allocations if a.instance_type.accelerator_resource == "gpu"]
    if not gpu_types:
        return None
    # the smallest type whose node holds the job (or a pod of it), by accelerators per node; research, which
    # lives on idle capacity, reaches for the big nodes and so borrows what the pre-training team is not using
    gpu_types.sort(key=lambda it: it.accelerators, reverse=team == "research")
    it = next((t for t in gpu_types if t.accelerators >= row.gpus), gpu_types[-1])
    per_pod = min(row.gpus, it.accelerators)
    pods = math.ceil(row.gpus / per_pod)
    # a team that never borrows (Lend, DontLend) is not sent a gang larger than its quota there: it would
    # wait forever at the head of its queue, and a demo should show waiting that ends
    alloc = next(a for a in allocations if a.instance_type_id == it.pk)
    if alloc.team.sharing != Sharing.LEND_AND_BORROW:
        quota = alloc.resolved().get(it.accelerator_key, 0)
        if quota >= per_pod:
            pods = min(pods, quota // per_pod)
    share = per_pod / it.accelerators
    return {
        "instance_type": it.name,
        "accelerators": per_pod,
        "vcpus": max(1, math.floor(it.vcpus * share * 0.9)),
        "memory_gib": max(4, math.floor(it.memory_gib * share * 0.9)),
        "pods": pods,
    }


def priority_for(team: str, row: TraceRow) -> str:
    if row.duration_s < 600:
        return "experimentation-priority"
    return TEAM_PRIORITY.get(team, "training-priority")


def request_for(row: TraceRow, team: str, allocations) -> JobRequest | None:
    sizes = shape(row, allocations, team)
    if sizes is None:
        return None
    duration = min(MAX_DURATION_S, max(MIN_DURATION_S, round(row.duration_s / DURATION_COMPRESSION)))
    model = MODELS[row.index % len(MODELS)]
    return JobRequest(
        team=team,
        name=f"{model}-{'train' if row.gpus > 1 else 'exp'}-r{row.index:05d}",
        image="nvcr.io/nvidia/pytorch:24.05-py3",
        command=f"python train.py --model {model} --replay-philly-row {row.index}",
        priority_class=priority_for(team, row),
        expected_duration_s=duration,
        **sizes,
    )


def _progress() -> tuple[int, datetime | None]:
    """(next row to submit, when the replay started) from the demo jobs already in the database."""
    last = Job.objects.filter(name__regex=r"-r[0-9]{5}$").order_by("-pk").only("name", "submitted_at").first()
    first = Job.objects.filter(name__regex=r"-r[0-9]{5}$").order_by("pk").only("submitted_at").first()
    if last is None:
        return 0, None
    return int(ROW.search(last.name).group(1)) + 1, first.submitted_at


def _scientists() -> dict[str, list[User]]:
    out: dict[str, list[User]] = {}
    for user in User.objects.filter(role=Role.SCIENTIST, is_active=True).prefetch_related("teams").order_by("pk"):
        for team in user.teams.all():
            out.setdefault(team.name, []).append(user)
    return out


def demo_traffic_step(*, now: datetime | None = None, limit: int = 200) -> int:
    """Submit the rows that are due; returns how many jobs were submitted."""
    now = now or timezone.now()
    rows = trace()
    next_row, started = _progress()
    if started is None:
        due = OPENING_BURST
    else:
        cycle, next_index = divmod(next_row, len(rows))
        elapsed_trace_s = (now - started).total_seconds() * ARRIVAL_COMPRESSION
        span = rows[-1].offset_s + 3600
        burst_end = rows[min(OPENING_BURST, len(rows)) - 1].offset_s  # the replay's clock starts after the burst
        due_offset = burst_end + elapsed_trace_s - cycle * span
        due = sum(1 for r in rows[next_index:] if r.offset_s <= due_offset)
    if Job.objects.filter(state__in=QUEUED_STATES, name__regex=r"-r[0-9]{5}$").count() >= MAX_QUEUED:
        return 0
    scientists = _scientists()
    allocations: dict[str, list[ComputeAllocation]] = {}
    for alloc in ComputeAllocation.objects.select_related("team", "instance_type"):
        allocations.setdefault(alloc.team.name, []).append(alloc)
    teams = set(Team.objects.values_list("name", flat=True))
    submitted = 0
    for k in range(min(due, limit)):
        row = rows[(next_row + k) % len(rows)]
        team = team_for(row.vc)
        users = scientists.get(team)
        if team not in teams or not users:
            continue
        request = request_for(row, team, allocations.get(team, []))
        if request is None:
            continue
        request.name = f"{request.name[:-6]}-r{(next_row + k) % 100000:05d}"
        try:
            job_submit(user=users[row.index % len(users)], request=request)
        except ValidationError:
            continue
        submitted += 1
    return submitted
