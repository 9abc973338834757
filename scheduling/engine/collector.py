"""The cyclic garbage collector, paused while the engine's state is built."""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def collector_paused():
    """Building a scheduler's state makes some 20 objects per job, all of them kept: the cyclic collector, run
    every 700 allocations, would only walk them again and again (0.3-0.5 s of a 1.5 s pass reading 18,000 jobs
    at the bounds' largest cluster, bench/bounds.py). It is paused while the state is built and resumed after,
    as it was (a caller that had it off finds it off)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
