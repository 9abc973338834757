"""The scheduler process's own wake-ups at the ends of the jobs it started: served when they fall due.

The carrier thread starts jobs while the scheduler's main thread waits; each start registers a wake-up at the
job's end. Before the alarm clock, a wake-up registered during a wait was served only at the wait's timeout
(a quiet cluster ran idle for up to a second after every end), and a wait timed by Redis's BLPOP ended only on
Redis's own clock tick (up to 100 ms late).
"""

import threading
import time
from types import SimpleNamespace

import pytest

from scheduling import loop

# Generous: the wait's timeout is 30 s, so anything near it is the old behaviour; the precision itself is a
# figure of bench/live_loop.py, never a timed assertion here.
SERVED_WITHIN_S = 3.0


@pytest.fixture
def alarms(monkeypatch):
    monkeypatch.setattr(loop, "_alarms", None)
    loop.serve_cluster_wakeups_here()
    yield
    monkeypatch.setattr(loop, "_alarms", None)


@pytest.fixture(params=["without redis", "with redis"])
def wake_list(request, settings, monkeypatch):
    """The scheduler blocks on the Redis wake list (BLPOP), or, without Redis, sleeps on a local event."""
    monkeypatch.setattr(loop, "_redis", None)
    if request.param == "with redis":
        import redis

        client = redis.Redis.from_url("redis://127.0.0.1:6379/14")
        try:
            client.ping()
        except redis.ConnectionError:
            pytest.skip("no Redis on 127.0.0.1:6379")
        client.delete(loop.WAKE_LIST, loop.WAKE_FLAG)
        settings.REDIS_URL = "redis://127.0.0.1:6379/14"
    else:
        settings.REDIS_URL = ""
    yield request.param
    if request.param == "with redis":
        client.delete(loop.WAKE_LIST, loop.WAKE_FLAG)
    monkeypatch.setattr(loop, "_redis", None)


def register_later(delay: float, due_in: float) -> threading.Thread:
    """Another thread (as the carrier) registers a wake-up `due_in` seconds ahead, `delay` seconds from now."""

    def register():
        time.sleep(delay)
        loop.wake_cluster_at(time.time() + due_in)

    thread = threading.Thread(target=register)
    thread.start()
    return thread


def test_a_wake_up_registered_during_a_wait_ends_it_when_due_not_at_the_timeout(alarms, wake_list):
    t0 = time.time()
    register_later(0.05, 0.2).join(0)
    triggers = []
    while "cluster" not in triggers and time.time() - t0 < 30:
        triggers = loop.wait_for_wake(30)  # without Redis it polls the database every 0.5 s: empty returns
    waited = time.time() - t0
    assert "cluster" in triggers
    assert 0.25 - loop.ALARM_SLACK_S <= waited < SERVED_WITHIN_S  # not before the end: it would not see it
    assert loop.REARM not in triggers  # the clock's own nudge is never a trigger
    assert loop._next_alarm() is None


def test_a_wait_ended_by_the_clock_leaves_other_triggers_to_the_next_one(alarms, wake_list):
    """The clock's nudge folds nothing away: a submit that arrives after it still wakes the scheduler."""
    loop.wake_cluster_at(time.time() + 0.05)
    assert loop.wait_for_wake(30) == ["cluster"]
    if wake_list == "with redis":
        loop.wake_scheduler("submit")
        assert loop.wait_for_wake(30) == ["submit"]


def test_the_gap_between_passes_ends_when_a_wake_up_falls_due(alarms, wake_list):
    t0 = time.time()
    register_later(0.02, 0.1).join(0)
    assert loop.sleep_unless_due(30)
    assert time.time() - t0 < SERVED_WITHIN_S
    assert "cluster" in loop.wait_for_wake(0)
    assert not loop.sleep_unless_due(0.01)  # nothing due: it sleeps its time


def test_a_simulated_job_wakes_the_scheduler_at_its_own_end_also_when_it_fails_part_way(settings, monkeypatch):
    from scheduling.backends import simulated

    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.SIMULATED_TIME_SCALE = 0.01
    registered = []
    monkeypatch.setattr(loop, "wake_cluster_at", lambda due: registered.append(due) or True)
    cluster = simulated.SimulatedCluster()
    monkeypatch.setattr(cluster, "_node_count", lambda instance_type: 4)
    for rate in (0.0, 1.0):
        settings.SIMULATED_FAILURE_RATE = rate
        job = SimpleNamespace(pk=7, name="train", team=SimpleNamespace(namespace="ns"), preemption_count=0,
                              expected_duration_s=600)  # fmt: skip
        ref = cluster.start(job, instance_type="ml.p5.48xlarge", nodes=[0])
        started = simulated.started_on_cluster(ref).timestamp()
        outcome, after = simulated.fate(job)
        assert outcome == ("succeeded" if rate == 0 else "failed")
        # the observer sees the end at started + after: the wake-up comes just after that, never before
        assert registered[-1] == pytest.approx(started + after + simulated.WAKE_UP_AFTER_END_S, abs=1e-6)
        assert simulated.WAKE_UP_AFTER_END_S > loop.ALARM_SLACK_S
