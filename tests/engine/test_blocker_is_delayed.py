"""A reservation refuses a workload only for a head it really delays (Scheduler.reservation_blocker): the
head named is pending, one the workload must respect, and a plan made from scratch with the workload
admitted starts it later than the current plan does. The trial plan may stop early at the first rival it
delays; a head that can never start must not stop it (every head after it looked delayed, and with
refusals remembered, a blocker already running held teams back forever: a settle that never ended)."""

import json
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine.admission import Scheduler
from scheduling.engine.queues import PENDING
from scheduling.engine.quota import EPS
from scheduling.engine.reservations import Extra, end_of
from scheduling.engine.simulator import simulate_scenario

from .test_invariants import scenarios
from .test_refusal_memory import _crowded
from .test_reservations import streams

COMMON = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def checked(data: dict) -> int:
    """Run the scenario, checking every refusal; how many were checked."""
    original = Scheduler.reservation_blocker
    seen = [0]

    def check(self, job, plan):
        blocker = original(self, job, plan)
        if blocker is None:
            return None
        seen[0] += 1
        assert blocker.state == PENDING and blocker is not job
        base = self.current_plan(self.scope(job.team))
        assert blocker in base.heads
        heads = [h for h in base.heads if h is not job]
        f, nodes = plan[0], plan[1]
        fresh = self.planner.plan(heads, Extra(job, f, nodes, end_of(job, self.now)))
        assert fresh.start(blocker) > base.start(blocker) + EPS, f"{job.name} refused for {blocker.name}, not delayed"
        return blocker

    Scheduler.reservation_blocker = check
    try:
        simulate_scenario(data)
    finally:
        Scheduler.reservation_blocker = original
    return seen[0]


@COMMON
@given(scenarios(with_cluster=True), st.integers(10, 60))
def test_a_refusal_names_a_head_it_delays_on_several_types(data, until):
    data["until"] = until  # work without a duration makes heads that can never start
    checked(data)


@COMMON
@given(streams())
def test_a_refusal_names_a_head_it_delays_on_reservation_streams(data):
    data["until"] = 300
    checked(data)


def test_the_regression_scenario_refuses_nobody():
    path = Path(__file__).parent / "scenarios" / "reservation-unplannable-head-delays-nobody.json"
    data = json.loads(path.read_text())
    data.pop("expect")
    assert checked(data) == 0


def _crowded_with_endless_work(seed: int) -> dict:
    """Crowded clusters of several types (test_refusal_memory._crowded) where some work has no known end and
    some teams may not borrow: heads that can never start sit among the planned ones."""
    data = _crowded(seed)
    rng = random.Random(seed)
    for w in data["workloads"]:
        if rng.random() < 0.15:
            w["duration"] = None
    for team in data["teams"]:
        if rng.random() < 0.3:
            team["borrowing_limit"] = {name: {"gpu": 0} for name in team["quota"]}
    return data


def test_a_refusal_names_a_head_it_delays_on_crowded_clusters():
    refusals = sum(checked(_crowded_with_endless_work(seed)) for seed in range(40))
    assert refusals > 100  # the property is asked, not vacuous
