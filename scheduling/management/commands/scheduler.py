"""manage.py scheduler: the admission loop as a long-lived process that keeps the engine warm.

Run one or more (on any hosts sharing the database): one leads and admits, the others wait and take over
within a second or two when it dies. SIGTERM / Ctrl-C stops it after the current pass.
"""

import faulthandler
import logging
import os
import signal
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection

from scheduling.loop import serve_cluster_wakeups_here, sleep_unless_due, wait_for_wake, wake_up_due
from scheduling.warm import Carrier, Leadership, WarmScheduler

log = logging.getLogger("scheduling.scheduler")

STANDBY_RETRY_S = 1.0  # how often a standby tries to take over
LEADERSHIP_CHECK_S = 5.0  # how often the leader checks that its lock's connection is still alive


class Command(BaseCommand):
    help = "Run the warm admission scheduler (one leader at a time; others stand by)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--min-gap", type=float, default=0.05, help="seconds between the starts of two passes (batches events)"
        )
        parser.add_argument("--idle", type=float, default=1.0, help="seconds between passes when nothing happens")
        parser.add_argument("--passes", type=int, default=0, help="stop after this many passes (0: run until told)")

    def handle(self, *args, min_gap: float, idle: float, passes: int, **options):
        if settings.ADMISSION_SCHEDULER != "process":
            self.stderr.write("ADMISSION_SCHEDULER is 'celery': the Celery workers admit; not starting")
            return
        self.stopping = False
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        faulthandler.register(signal.SIGUSR1, all_threads=True)  # kill -USR1 <pid>: where is it stuck?
        serve_cluster_wakeups_here()  # the carrier starts jobs here: their ends wake this process directly
        carrier = Carrier()
        leadership, scheduler = Leadership(), WarmScheduler(carry_out=carrier, freeze_state=True)
        done, last_check, last_start, standing_by, cut = 0, time.monotonic(), 0.0, False, False
        try:
            while not self.stopping and (not passes or done < passes):
                if not leadership.held:
                    if not self._take(leadership):
                        if not standing_by:
                            log.warning("scheduler: another scheduler leads; standing by (pid %s)", os.getpid())
                        standing_by = True
                        time.sleep(STANDBY_RETRY_S)
                        continue
                    scheduler.drop("takeover" if standing_by else "start")
                    last_check = time.monotonic()
                gap = min_gap - (time.monotonic() - last_start)
                if gap > 0 and not cut:
                    # let a burst of submits gather into one pass, but not past the end of a job: room that
                    # frees up is given out at once
                    sleep_unless_due(gap)
                # after a pass cut short by its settle budget: no waiting, and the cluster is observed first
                triggers = wait_for_wake(0.0 if cut else idle) + (["continue", "cluster"] if cut else [])
                if any(t.startswith("config") for t in triggers):
                    scheduler.drop("configuration changed")
                last_start = time.monotonic()
                try:
                    result = scheduler.run_pass(
                        trigger=triggers[0] if triggers else "idle", observe="cluster" in triggers
                    )
                    cut = result.cut
                except Exception:
                    cut = False
                    log.exception("scheduler pass failed; the next pass re-reads the whole state")
                    time.sleep(0.5)
                done += 1
                # the state a whole read replaced is collected while nothing waits (or after GARBAGE_WAIT_S)
                scheduler.collect_garbage(idle=not cut and not wake_up_due())
                if time.monotonic() - last_check > LEADERSHIP_CHECK_S:
                    last_check = time.monotonic()
                    if not leadership.still_held():
                        log.warning("scheduler: lost leadership (database connection lost); standing by")
                        scheduler.drop("lost leadership")
                        connection.close()
        finally:
            carrier.stop()
            leadership.release()

    def _take(self, leadership: Leadership) -> bool:
        try:
            taken = leadership.try_take()
        except Exception:
            log.warning("scheduler: database unreachable; retrying")
            connection.close()
            return False
        if taken:
            log.warning("scheduler: leading (pid %s)", os.getpid())
        return taken

    def _stop(self, *args):
        self.stopping = True
