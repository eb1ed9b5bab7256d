"""How many quiet tests may run at once on this host (scripts/lab.sh test's second pass).

The quiet tests' margins (tests/conftest.py QUIET) were measured two at a time on hosts whose two cores each run
LOOP below in 0.17-0.19 s. On a host that gives the suite about half of that (a slower or shared host; a 1.1-CPU
cgroup quota on one of ours: 0.25-0.30 s) a quiet test beside another failed three claims in a run (an A/B
interval, two scenarios' ratios; docs/MEASUREMENTS.md#the-test-suite): there each quiet test runs alone.
`--at-once`: the count where both passes run at once on an idle host, four on a quick one (one at a time beside
the first pass, tests/quiet_lane.py; four once it ends). Prints the worker count on stdout and what was measured on
stderr.

`--busy` prints instead the share of both cores that was busy over a second (/proc/stat), measured before the passes
start: only on a host that is otherwise idle may the first pass run beside the quiet one in a low-weight cgroup
(scripts/lab.sh make_pass_cgroup). Beside other work (`stress-ng --cpu 1`: about 0.5) that cgroup would leave the
first pass one core less than its tests were measured with, and on 2026-12-03 its browser tests failed their waits
there (docs/MEASUREMENTS.md#the-test-suite): the passes then run one after the other.
"""
from __future__ import annotations

import multiprocessing
import statistics
import sys
import time
from pathlib import Path

LOOP = 5_000_000
IDLE_BELOW = 0.25  # at most this share of the cores busy before the run: the passes may run at once
QUICK_S = 0.24  # above it, one quiet test at a time
TRIES = 3
AT_ONCE_TRIES = 5


def spin(_: int = 0) -> float:
    """Return the seconds one process takes to count LOOP integers."""
    started, total = time.perf_counter(), 0
    for i in range(LOOP):
        total += i
    return time.perf_counter() - started


def two_at_once(at_once: bool = False) -> tuple[float, list[float]]:
    """Return the host's pace with both cores busy and its tries: the slower of two processes spinning at once,
    TRIES times (AT_ONCE_TRIES with `at_once`; pace below)."""
    with multiprocessing.Pool(2) as pool:
        tries = [max(pool.map(spin, range(2))) for _ in range(AT_ONCE_TRIES if at_once else TRIES)]
    return pace(tries, at_once), tries


def pace(tries: list[float], at_once: bool = False) -> float:
    """Return the host's pace from its tries: their median; with `at_once` the quickest of them.

    `--at-once` runs only where `--busy` has just found the host idle (scripts/lab.sh), so a slow try there is a
    moment's neighbour, not the host: the median of three read 0.25-0.26 s in two of sixteen clean-clone runs on
    an idle host on 2026-12-05 and 0.23-0.24 s in three more, where the others read 0.14-0.17 s; the two runs'
    quiet tests went one at a time after the first pass (11:04 and 10:29, where the others took 8:09-9:14).
    Beside `stress-ng --cpu 1` `--busy` says busy and the median decides: the quickest of five read 0.22 s there
    once, where the median read 0.25-0.30 s, and would have let two quiet tests run at once beside a busy core."""
    return min(tries) if at_once else statistics.median(tries)


def cpu_times(stat: str) -> tuple[int, int]:
    """Return (busy, total) jiffies of all CPUs from /proc/stat's text (idle and iowait are not busy)."""
    fields = [int(v) for v in stat.splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])  # guest time is counted in user time already
    return total - idle, total


def busy_share(before: str, after: str) -> float:
    """Return the share of the cores busy between two reads of /proc/stat."""
    (b0, t0), (b1, t1) = cpu_times(before), cpu_times(after)
    return (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0


def measure_busy(seconds: float = 1.0) -> float:
    before = Path("/proc/stat").read_text()
    time.sleep(seconds)
    return busy_share(before, Path("/proc/stat").read_text())


def quiet_workers(seconds: float, at_once: bool = False) -> int:
    """Return how many quiet tests run at once on a host whose two cores spin in `seconds`: on a quick host two, and
    four once the first pass has ended where both passes run at once (an otherwise idle host: after the first pass
    two quiet tests left the cores 65-90 % idle, and three and then four at once kept every claim,
    docs/MEASUREMENTS.md); beside the first pass tests/quiet_lane.py lets one in at a time."""
    if seconds > QUICK_S:
        return 1
    return 4 if at_once else 2


if __name__ == "__main__":
    if sys.argv[1:] == ["--busy"]:
        share = measure_busy()
        print(f"host load: {share:.0%} of the cores busy over a second before the run (both passes at once below "
              f"{IDLE_BELOW:.0%})", file=sys.stderr)
        print("idle" if share < IDLE_BELOW else "busy")
        sys.exit(0)
    at_once = sys.argv[1:] == ["--at-once"]
    took, tries = two_at_once(at_once)
    workers = quiet_workers(took, at_once)
    count = ("one", "two", "three", "four")[workers - 1]
    print(f"host speed: two loops at once in {took:.2f} s ({'the quickest' if at_once else 'the median'} of "
          f"{', '.join(f'{t:.2f}' for t in tries)}; quiet tests {count} at a "
          f"time{' once the first pass ends' if at_once else ''}; over {QUICK_S} s: one)", file=sys.stderr)
    print(workers)
