"""A blocked team is woken only by what could unblock it (Scheduler._wake): room released on an instance
type wakes the teams with a candidate that could run there, the team whose work stopped, and, where a
planned head may run on that type and another, the teams a reservation held back; new borrowed work wakes
the teams that could take it there, or take that team's borrowed work elsewhere now that its share rose.
That must change no decision: the engine decides as when every blocked team is offered again, on random
clusters with several instance types, fair share, gangs and jobs without a type."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine.admission import Scheduler

from .helpers import with_and_without
from .test_refusal_memory import _crowded
from .test_reservations import streams
from .test_victim_search_cache import _contended, varied

COMMON = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def both(data: dict) -> tuple[dict, dict]:
    return with_and_without(Scheduler, "narrow_wakes", data)


@COMMON
@given(varied(with_cluster=True), st.integers(0, 60))
def test_the_same_decisions_waking_every_blocked_team_on_nodes(data, until):
    data["until"] = until
    narrow, everyone = both(data)
    assert narrow == everyone


@COMMON
@given(varied(with_cluster=False))
def test_the_same_decisions_waking_every_blocked_team_quota_only(data):
    narrow, everyone = both(data)
    assert narrow == everyone


@COMMON
@given(streams())
def test_the_same_decisions_waking_every_blocked_team_on_reservation_streams(data):
    data["until"] = 300
    narrow, everyone = both(data)
    assert narrow == everyone


def test_the_same_decisions_waking_every_blocked_team_on_crowded_and_contended_clusters():
    # seeds 0-19, and 27, 38 and 51, where waking by type first differed (51: a team blocked while a settle
    # protected its victim must be woken once it is not)
    for seed in [*range(20), 27, 38, 51]:
        for data in (_crowded(seed), _contended(seed)):
            narrow, everyone = both(data)
            assert narrow == everyone, seed
