"""The portal as it runs on several hosts: two web processes, two Celery workers and a scheduler, sharing
only PostgreSQL and Redis. Jobs submitted through either web process are admitted, run and finish; each is
visible through the other web process; both workers take work from the shared broker."""

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.db import connection

from quotas.models import ApiToken
from scheduling.models import FINAL_STATES, Job, JobState

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WEB_PORTS = (8161, 8162)


def environment() -> dict:
    s = connection.settings_dict
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}",
        CELERY_TASK_ALWAYS_EAGER="false",
        ADMISSION_SCHEDULER="process",
        SIMULATED_TIME_SCALE="0.05",
        SIMULATED_FAILURE_RATE="0",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        LOG_LEVEL="INFO",
    )
    return env


def api(port: int, token: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=body,
        headers={
            "Authorization": f"Token {token}",
            "Content-Type": "application/json",
            "X-Forwarded-Proto": "https",
        },  # fmt: skip
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_for(predicate, timeout: float):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s")


def test_two_webs_two_workers_and_a_scheduler_share_only_postgres_and_redis(scientist, team_a, tmp_path):
    import json

    env = environment()
    logs = {}

    def start(name, argv):
        logs[name] = tmp_path / f"{name}.log"
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=logs[name].open("w"), stderr=subprocess.STDOUT)

    procs = [
        start(f"web{i}", [str(BIN / "gunicorn"), "portal.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1"])
        for i, port in enumerate(WEB_PORTS)
    ]
    procs += [
        start(
            f"worker{i}",
            [
                str(BIN / "celery"),
                "-A",
                "portal",
                "worker",
                "-l",
                "INFO",
                "-c",
                "1",
                "-n",
                f"hosts{i}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
        )  # fmt: skip
        for i in range(2)
    ]
    procs.append(start("scheduler", [sys.executable, "manage.py", "scheduler", "--idle", "0.5"]))
    _, token = ApiToken.issue(user=scientist, name="hosts")
    try:
        wait_for(lambda: all(_answers(port) for port in WEB_PORTS), 60)
        submitted = []
        for i in range(12):
            body = json.dumps({"team": team_a.name, "name": f"h{i}", "image": "pytorch:2", "accelerators": 2,
                               "vcpus": 4, "memory_gib": 32, "expected_duration_s": 20}).encode()  # fmt: skip
            status, answer = api(WEB_PORTS[i % 2], token, "/api/jobs/", body)
            assert status == 201, answer
            submitted.append(json.loads(answer)["id"])
        wait_for(lambda: Job.objects.filter(pk__in=submitted, state__in=FINAL_STATES).count() == 12, 90)
        assert set(Job.objects.filter(pk__in=submitted).values_list("state", flat=True)) == {JobState.SUCCEEDED}
        for i, pk in enumerate(submitted):  # each job reads the same through the web process it did not use
            status, answer = api(WEB_PORTS[(i + 1) % 2], token, f"/api/jobs/{pk}/")
            assert status == 200 and json.loads(answer)["state"] == "succeeded"
        # The scheduler started the jobs and woke itself at their ends; the workers run the periodic tasks,
        # beat's cluster tick among them: sent through the shared broker, both workers take some.
        from portal.celery import app

        def both_workers_took_work() -> bool:
            app.send_task("scheduling.tasks.cluster_tick", kwargs={"retry_starts": True})
            return all("succeeded in" in logs[f"worker{i}"].read_text() for i in range(2))

        wait_for(both_workers_took_work, 60)
        status, answer = api(WEB_PORTS[0], token, "/readyz")
        assert status == 200, answer
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()


def _answers(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
        return True
    except urllib.error.HTTPError:
        return True  # it answers (a redirect or an error is still an answer)
    except OSError:
        return False
