"""A victim search adds victims one at a time and asks after each whether the gang fits; it also tries single
victims one by one in place of several, and takes back the ones not needed one by one. The gang's pods that the
nodes hold are counted as victims come and go, on the nodes they free only (preemption.Trial, `counted`), and a
placement is tried only where that count says it succeeds: the count is NodePool.can_place's, which is exactly
when `place` succeeds. That must change no decision: compared with the engine placing after every victim."""

import random

import pytest
from hypothesis import HealthCheck, given, settings

from scheduling.engine import preemption
from scheduling.engine.placement import NodePool

from .helpers import with_and_without
from .test_blocker_is_delayed import _crowded_with_endless_work
from .test_refusal_memory import _crowded
from .test_victim_search_cache import _contended, varied

COMMON = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@COMMON
@given(varied(with_cluster=True))
def test_the_same_decisions_placing_after_every_victim(data):
    counted, placed = with_and_without(preemption.Trial, "count_room", data)
    assert counted == placed


@pytest.mark.parametrize("seed", range(30))
def test_the_same_decisions_placing_after_every_victim_on_crowded_and_contended_clusters(seed):
    for data in (_crowded(seed), _contended(seed), _crowded_with_endless_work(seed)):
        counted, placed = with_and_without(preemption.Trial, "count_room", data)
        assert counted == placed, seed


class _Job:
    """What a Trial reads of a workload: its shape, and for a victim its team, nodes and totals."""

    def __init__(self, per_pod, pods, nodes=None, team=None):
        self.per_pod, self.pods, self.nodes = per_pod, pods, nodes
        self.nz = [r for r, amount in enumerate(per_pod) if amount > 0]
        self.total = [amount * pods for amount in per_pod]
        self.team = team


class _Team:
    idx = 0
    book = None


class _Scheduler:
    def __init__(self, pool):
        self.pools = [pool]
        self.book = None


@pytest.mark.parametrize("seed", range(200))
def test_the_count_is_what_placement_finds(seed):
    """Random nodes, part-used; a random gang; victims added and taken back in random order: after each change
    the kept count says yes exactly when NodePool.place finds nodes (and when can_place says so)."""
    rng = random.Random(seed)
    capacity = [96.0, 768.0, 8.0]
    pool = NodePool(capacity, rng.randint(1, 12), ["cpu", "memory", "gpu"])
    running = []
    for _ in range(rng.randint(0, 40)):
        per_pod = [float(rng.choice((0, 4, 12, 24))), float(rng.choice((0, 16, 64, 256))), float(rng.randint(0, 4))]
        if not any(per_pod):
            continue
        nodes = pool.place(per_pod, [r for r, a in enumerate(per_pod) if a > 0], rng.randint(1, 3))
        if nodes is not None:
            victim = _Job(per_pod, len(nodes), nodes, _Team())
            pool.take(nodes, per_pod, victim.nz)
            running.append(victim)
    gang = _Job([float(rng.choice((0, 8, 24))), float(rng.choice((0, 64, 512))), float(rng.randint(1, 8))],
                rng.randint(1, 6), team=_Team())  # fmt: skip
    s = _Scheduler(pool)
    counted, plain = preemption.Trial(s, gang, 0, counted=True), preemption.Trial(s, gang, 0)
    assert counted.counted
    taken = []
    for _ in range(60):
        if taken and (rng.random() < 0.4 or len(taken) == len(running)):
            victim = taken.pop(rng.randrange(len(taken)))
            sign = -1
        elif running:
            victim = rng.choice([v for v in running if v not in taken])
            taken.append(victim)
            sign = 1
        else:
            break
        counted.add(victim, sign)
        plain.add(victim, sign)
        fits = pool.place(gang.per_pod, gang.nz, gang.pods, plain.extra) is not None
        assert counted.placeable() == fits
        assert pool.can_place(gang.per_pod, gang.nz, gang.pods, plain.extra) == fits
