"""A trial plan (a workload tried as if admitted now) searches again only the heads that can run on an instance
type the trial changed: the workload's own, and those of every head whose hold came out different. The
others keep the prior plan's hold (Planner.plan, skip_untouched). That must change no decision: the engine
decides as when every head after the first change is planned again, on random clusters with several
instance types, jobs without a type (heads that may run on several), gangs and the reservation streams."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine.reservations import Planner

from .helpers import with_and_without
from .test_invariants import scenarios
from .test_refusal_memory import _crowded
from .test_reservations import streams
from .test_victim_search_cache import _contended

COMMON = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def both(data: dict) -> tuple[dict, dict]:
    return with_and_without(Planner, "skip_untouched", data)


@COMMON
@given(scenarios(with_cluster=True), st.integers(20, 200))
def test_the_same_decisions_planning_every_head_again_on_several_types(data, until):
    data["until"] = until
    for w in data["workloads"]:
        w["duration"] = w["duration"] or 7
    skipped, planned = both(data)
    assert skipped == planned


@COMMON
@given(streams())
def test_the_same_decisions_planning_every_head_again_on_reservation_streams(data):
    data["until"] = 300
    skipped, planned = both(data)
    assert skipped == planned


def test_the_same_decisions_planning_every_head_again_on_crowded_and_contended_clusters():
    for seed in range(20):
        for data in (_crowded(seed), _contended(seed)):
            skipped, planned = both(data)
            assert skipped == planned, seed
