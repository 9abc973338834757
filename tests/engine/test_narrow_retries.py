"""A settle that finds waste starts again from its own beginning with work protected or deferred
(Scheduler.settle). Teams that were blocked in that very state, under no protection and held back by no
reservation, are not offered again then (a thousand teams offered again on every retry was most of a pass on a
full cluster): protection only takes victims away, deferral only keeps work out. That must change no
decision: the engine decides as when every team is offered again, on random clusters and contended ones."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine.admission import Scheduler

from .helpers import with_and_without
from .test_blocker_is_delayed import _crowded_with_endless_work
from .test_invariants import scenarios
from .test_refusal_memory import _crowded
from .test_reservations import streams
from .test_victim_search_cache import _contended

COMMON = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def both(data: dict) -> tuple[dict, dict]:
    return with_and_without(Scheduler, "narrow_retries", data)


@COMMON
@given(scenarios(with_cluster=True), st.integers(10, 60))
def test_the_same_decisions_offering_everyone_on_retries_on_several_types(data, until):
    data["until"] = until
    narrow, everyone = both(data)
    assert narrow == everyone


@COMMON
@given(streams())
def test_the_same_decisions_offering_everyone_on_retries_on_reservation_streams(data):
    data["until"] = 300
    narrow, everyone = both(data)
    assert narrow == everyone


def test_the_same_decisions_offering_everyone_on_retries_on_crowded_and_contended_clusters():
    for seed in range(15):
        for data in (_crowded(seed), _contended(seed), _crowded_with_endless_work(seed)):
            narrow, everyone = both(data)
            assert narrow == everyone, seed
