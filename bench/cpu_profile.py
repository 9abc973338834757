"""Run a Python program under cProfile counting CPU time, not wall time (a wall-clock profile on a shared
machine mostly measures waiting for a core). Used by live_loop.py --profile-scheduler / --profile-worker.

Usage: python bench/cpu_profile.py OUTFILE (-m MODULE | SCRIPT) [ARGS ...]; the profile is written on exit,
including a SIGTERM (turned into SystemExit unless the program handles it itself).
"""

import cProfile
import runpy
import sys
import time

if __name__ == "__main__":
    out, *rest = sys.argv[1:]
    module = rest[0] == "-m"
    target, args = (rest[1], rest[2:]) if module else (rest[0], rest[1:])
    sys.argv = [target, *args]
    if not module:
        sys.path.insert(0, str(__import__("pathlib").Path(target).resolve().parent))
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    try:
        runpy.run_module(target, run_name="__main__", alter_sys=True) if module else runpy.run_path(
            target, run_name="__main__"
        )
    finally:
        profile.disable()
        profile.dump_stats(out)
