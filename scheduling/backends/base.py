"""The interface every cluster backend implements. The admission loop talks to nothing else.

The loop decides (with the engine) and commits its decisions to the database first; it then asks the
backend to carry them out. Backends report back what the cluster did through `observe()`, which the
loop applies as job transitions. A backend that cannot reach its cluster raises ClusterUnreachable;
the loop records that as the jobs' reason and tries again on its next run, losing nothing.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime


class ClusterUnreachable(Exception):
    """The cluster's API cannot be reached right now; try again later."""


@dataclass
class Observation:
    """Something the cluster did to a job since the last look."""

    job_id: int
    state: str  # "running" | "succeeded" | "failed"
    at: datetime
    reason: str = ""


@dataclass
class InventoryItem:
    """A node group as the cluster reports it."""

    instance_type: str
    node_count: int
    accelerator_resource: str = ""  # "gpu" | "neuron" | ""
    accelerators: int = 0
    vcpus: int = 0
    memory_gib: int = 0
    extra: dict = field(default_factory=dict)


class ClusterBackend(ABC):
    name: str = "abstract"

    @abstractmethod
    def start(self, job, *, instance_type: str, nodes: list[int] | None) -> str:
        """Run an admitted job (create / unsuspend it). Returns the backend's reference for it."""

    @abstractmethod
    def stop(self, job, *, reason: str, preempted: bool) -> None:
        """Stop a job: suspend it when preempted (it goes back to the queue), delete it when cancelled."""

    @abstractmethod
    def observe(self, jobs, *, now: datetime) -> list[Observation]:
        """Report what happened to the given admitted/running jobs since the last look."""

    def inventory(self) -> list[InventoryItem] | None:
        """The cluster's node groups, where the backend can read them (None: it cannot)."""
        return None
