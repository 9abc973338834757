"""A settle that finds waste undoes what it decided and tries again from the state it started from, with more work
protected or deferred (Scheduler.settle). Each try goes through the same states as the one before for as long as it
makes the same decisions, and asked the same trial plans of reservations there: the answers are remembered per
state, named by the decisions that led to it (Scheduler.reservation_blocker), and so are the admission plans
(Scheduler.plan; one with victims while none of the candidates it chose among has been protected since). That must
change no decision: the engine decides as when every try plans afresh, on random clusters, reservation streams and
crowded or contended clusters, where retries happen."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine import preemption
from scheduling.engine.admission import Scheduler

from .helpers import calls_with_and_without, with_and_without
from .test_blocker_is_delayed import _crowded_with_endless_work
from .test_invariants import scenarios
from .test_refusal_memory import _crowded
from .test_reservations import streams
from .test_victim_search_cache import _contended

COMMON = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _crowded_and_contended(seeds: int) -> list[dict]:
    """Three clusters per seed where retries happen: crowded, contended, crowded with endless work."""
    return [
        data for seed in range(seeds) for data in (_crowded(seed), _contended(seed), _crowded_with_endless_work(seed))
    ]


def both(data: dict) -> tuple[dict, dict]:
    return with_and_without(Scheduler, "memo_retries", data)


@COMMON
@given(scenarios(with_cluster=True), st.integers(10, 60))
def test_the_same_decisions_planning_afresh_on_retries_on_several_types(data, until):
    data["until"] = until
    memo, afresh = both(data)
    assert memo == afresh


@COMMON
@given(streams())
def test_the_same_decisions_planning_afresh_on_retries_on_reservation_streams(data):
    data["until"] = 300
    memo, afresh = both(data)
    assert memo == afresh


def test_the_same_decisions_planning_afresh_on_retries_on_crowded_and_contended_clusters_with_fewer_trials():
    """Where retries happen, the memo is used: the same decisions, and fewer trial plans asked."""
    asked, outputs = calls_with_and_without(
        Scheduler, "memo_retries", Scheduler, "_trial_blocker", _crowded_and_contended(40)
    )
    for k, (memo, afresh) in enumerate(outputs):
        assert memo == afresh, k // 3  # the seed
    assert asked[True] < asked[False], asked


@COMMON
@given(scenarios(with_cluster=True), st.integers(10, 60))
def test_the_same_decisions_choosing_victims_afresh_on_retries_on_several_types(data, until):
    data["until"] = until
    memo, afresh = with_and_without(Scheduler, "memo_victim_plans", data)
    assert memo == afresh


def test_retries_reuse_the_victims_they_chose_and_decide_the_same():
    """Admission plans with victims are remembered too, and reused while none of the candidates they were chosen
    among has been protected since (Scheduler.plan): the same decisions as searching again, over crowded and
    contended clusters, with fewer victim searches."""
    datas = _crowded_and_contended(25)
    searches, outputs = calls_with_and_without(Scheduler, "memo_victim_plans", preemption, "_search", datas)
    for k, (memo, afresh) in enumerate(outputs):
        assert memo == afresh, k // 3  # the seed
    assert searches[True] < searches[False], searches
