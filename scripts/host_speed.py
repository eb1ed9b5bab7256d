"""How many quiet tests may run at once on this host (scripts/lab.sh test's second pass).

The quiet tests' margins (tests/conftest.py QUIET) were measured two at a time on hosts whose two cores each run
LOOP below in 0.17-0.19 s. On a host that gives the suite about half of that (a slower or shared host; a 1.1-CPU
cgroup quota on one of ours: 0.25-0.30 s) a quiet test beside another failed three claims in a run (an A/B
interval, two scenarios' ratios; docs/MEASUREMENTS.md#the-test-suite): there each quiet test runs alone.
Prints the worker count on stdout and what was measured on stderr.
"""
from __future__ import annotations

import multiprocessing
import statistics
import sys
import time

LOOP = 5_000_000
QUICK_S = 0.24  # above it, one quiet test at a time
TRIES = 3


def spin(_: int = 0) -> float:
    """Return the seconds one process takes to count LOOP integers."""
    started, total = time.perf_counter(), 0
    for i in range(LOOP):
        total += i
    return time.perf_counter() - started


def two_at_once() -> float:
    """Return the median over TRIES of the slower of two processes spinning at once (both cores busy)."""
    with multiprocessing.Pool(2) as pool:
        return statistics.median(max(pool.map(spin, range(2))) for _ in range(TRIES))


def quiet_workers(seconds: float) -> int:
    """Return how many quiet tests run at once on a host whose two cores spin in `seconds`."""
    return 2 if seconds <= QUICK_S else 1


if __name__ == "__main__":
    took = two_at_once()
    workers = quiet_workers(took)
    print(f"host speed: two loops at once in {took:.2f} s (quiet tests {'two' if workers == 2 else 'one'} at a time; "
          f"over {QUICK_S} s: one)", file=sys.stderr)
    print(workers)
