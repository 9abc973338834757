"""`manage.py scheduler` as real processes: one leads, a standby takes over when the leader is killed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from scheduling.models import AdmissionRun, Job, JobState

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ADMITTED_OR_RUNNING = (JobState.ADMITTED, JobState.RUNNING)  # no Celery worker here to start them


def database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def start_scheduler(log_path: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(),
        CELERY_TASK_ALWAYS_EAGER="false",
        ADMISSION_SCHEDULER="process",
        SIMULATED_FAILURE_RATE="0",
        LOG_LEVEL="WARNING",
    )
    return subprocess.Popen(
        [sys.executable, "manage.py", "scheduler", "--idle", "0.5"],
        cwd=ROOT,
        env=env,
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
    )


def wait_for(predicate, timeout: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if predicate():
            return time.monotonic() - t0
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s")


def leader(procs, logs) -> int:
    leading = [i for i, path in enumerate(logs) if "leading" in path.read_text()]
    assert len(leading) == 1, [p.read_text() for p in logs]
    return leading[0]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="leadership by advisory lock needs PostgreSQL")
def test_a_standby_scheduler_takes_over_within_seconds_when_the_leader_dies(
    scientist, team_a, submit, settings, tmp_path
):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # submits wake the scheduler processes through Redis
    settings.ADMISSION_SCHEDULER = "process"
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    procs = [start_scheduler(logs[0])]
    try:
        wait_for(lambda: "leading" in logs[0].read_text(), 20)
        procs.append(start_scheduler(logs[1]))
        wait_for(lambda: "standing by" in logs[1].read_text(), 20)
        first = submit(scientist, team_a, name="first", accelerators=2)
        wait_for(lambda: Job.objects.get(pk=first.pk).state in ADMITTED_OR_RUNNING, 10)
        assert leader(procs, logs) == 0
        procs[0].send_signal(signal.SIGKILL)  # no clean shutdown: the lock goes with its connection
        procs[0].wait(10)
        second = submit(scientist, team_a, name="second", accelerators=2)
        took = wait_for(lambda: Job.objects.get(pk=second.pk).state in ADMITTED_OR_RUNNING, 15)
        assert took < 5, took
        assert "leading" in logs[1].read_text()
        assert AdmissionRun.objects.filter(trigger="warm:reload:start").count() == 1  # the first leader
        assert AdmissionRun.objects.filter(trigger="warm:reload:takeover").count() == 1  # the standby, once
        assert Job.objects.filter(state__in=["admitted", "running"]).count() == 2
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
