"""A workload admitted and then evicted within one settle is deferred on the retry (Scheduler.settle), and the
workload that took its room is offered first then, so that it takes that room directly. Deferring alone let the
next borrower in line take the same room, be evicted in turn and deferred on the next retry: one retry of the
whole settle per borrower (15 in a row in the full-cluster bench, 14 CPU-s for one pass). Either way no
eviction is undone at the instant it happens; the properties of reservations hold with it on (the other tests
run with it) and with it off."""

import pytest
from hypothesis import HealthCheck, given, settings

from scheduling.engine import simulate_scenario
from scheduling.engine.admission import Scheduler

from .helpers import job, scenario, with_and_without
from .test_reservations import _assert_no_eviction_undone, streams
from .test_victim_search_cache import _contended

BORROWERS = 6


def _chain() -> dict:
    """One free slot of 4 GPUs on node type `a`. Six teams of weight 10 with no quota there would each borrow it
    with a tiny share; team `r`, already borrowing on `b` (a larger share), has 4 GPUs of nominal quota on `a`
    unused: it may reclaim the slot from whichever borrower takes it, and does."""
    nodes = [{"name": "a", "count": 1, "capacity": {"gpu": 8}}, {"name": "b", "count": 1, "capacity": {"gpu": 8}}]
    teams = [
        {"name": "lender", "quota": {"a": {"gpu": 4}}},
        {"name": "r", "quota": {"a": {"gpu": 4}, "b": {"gpu": 0}}},
        {"name": "m", "quota": {"b": {"gpu": 8}}},
    ] + [{"name": f"b{i}", "fair_share_weight": 10, "quota": {"a": {"gpu": 0}}} for i in range(BORROWERS)]
    workloads = [
        job("lender-work", "lender", gpu=4, instance_type="a"),
        job("r-on-b", "r", gpu=4, instance_type="b"),
        job("r-claim", "r", gpu=4, submit=1, instance_type="a", duration=100),
    ] + [job(f"borrow-{i}", f"b{i}", gpu=4, submit=1, instance_type="a", duration=100) for i in range(BORROWERS)]
    return scenario(teams, workloads, cluster=nodes, policy={"idle_compute": "fair-share"}, until=1)


def _settles(data: dict, favor: bool) -> tuple[dict, int]:
    calls = []
    original = Scheduler._settle_once

    def counted(self, start):
        calls.append(start)
        return original(self, start)

    Scheduler._settle_once = counted
    Scheduler.favor_evictors = favor
    try:
        return simulate_scenario(data), len(calls)
    finally:
        Scheduler._settle_once = original
        Scheduler.favor_evictors = True


@pytest.mark.parametrize("favor", [True, False])
def test_the_reclaimer_takes_the_room_and_no_borrower_starts_for_nothing(favor):
    out, _ = _settles(_chain(), favor)
    workloads = out["workloads"]
    assert workloads["r-claim"]["state"] == "running"
    assert all(workloads[f"borrow-{i}"]["state"] == "pending" for i in range(BORROWERS))
    assert all(w["preemptions"] == 0 for w in workloads.values())


def test_one_retry_instead_of_one_per_borrower():
    _, favored = _settles(_chain(), True)
    _, deferred_only = _settles(_chain(), False)
    assert deferred_only >= BORROWERS  # one retry per borrower deferred
    assert favored <= 4, favored  # t=0, t=1, one retry, and nothing more to do


COMMON = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@COMMON
@given(streams())
def test_no_eviction_undone_without_favoring_on_reservation_streams(data):
    data["until"] = 300
    with_favor, without = with_and_without(Scheduler, "favor_evictors", data)
    _assert_no_eviction_undone(with_favor)
    _assert_no_eviction_undone(without)


@pytest.mark.parametrize("seed", range(40))
def test_no_eviction_undone_with_or_without_favoring_on_contended_clusters(seed):
    with_favor, without = with_and_without(Scheduler, "favor_evictors", _contended(seed))
    _assert_no_eviction_undone(with_favor)
    _assert_no_eviction_undone(without)
