"""One quiet test at a time while the first pass runs beside the quiet pass; as many as its workers once it ends.

scripts/lab.sh runs the quiet pass on the workers scripts/host_speed.py --at-once allows (on a host as quick as
ours, 4) and, while the first pass runs beside it, names in TBL_FIRST_PASS_RUNNING a file that exists until each of
the first pass's workers has ended its last test and stopped its servers (tests/conftest.py marks it). While it
exists, a quiet test runs only holding an exclusive lock on FILE.lock, taken in turns: a worker that held it last
lets a waiting one go first, so the workers' queues go down together and none is left with a long queue for the end;
a test of tests/conftest.py TAIL waits instead for the file to go (after_the_first_pass). Once the file is gone the
workers run at once (docs/MEASUREMENTS.md#the-test-suite: alone, the quiet tests kept the two cores 80-95 % idle for
the last 4.7 minutes of the run; two at once, 65-90 %). Two at once beside the first pass (2026-12-04): a sweep's
operating point missed its p99 budget in one of seven clean runs, the `patterns` scenario's tail in an earlier try
(docs/MEASUREMENTS.md#the-test-suite).
"""
from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

POLL_S = 0.2
FRESH_S = 5.0  # a waiting mark older than this is a worker that stopped waiting (killed): not let go first


@contextmanager
def alone_while_the_first_pass_runs(flag: str | None, me: str | None = None) -> Iterator[None]:
    """Hold the quiet lane's lock for the body while `flag` (a path) exists; no lock without a flag or once it goes."""
    if not flag:
        yield
        return
    me = me or f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}"
    running = Path(flag)
    waiting = _sibling(running, f"waiting.{me}")
    last = _sibling(running, "last")
    with open(_sibling(running, "lock"), "a") as lock:
        try:
            while running.exists():
                waiting.touch()
                if _take(lock):
                    if _read(last) == me and _others_waiting(running, me):
                        fcntl.flock(lock, fcntl.LOCK_UN)  # their turn: held last, someone is waiting
                    else:
                        last.write_text(me)
                        break
                time.sleep(POLL_S)
        finally:
            waiting.unlink(missing_ok=True)
        yield


@contextmanager
def after_the_first_pass(flag: str | None) -> Iterator[None]:
    """Run the body once `flag` (a path) is gone: the first pass has ended (at once without a flag)."""
    while flag and Path(flag).exists():
        time.sleep(POLL_S)
    yield


def _sibling(flag: Path, suffix: str) -> Path:
    return flag.with_name(f"{flag.name}.{suffix}")


def _take(lock) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def _others_waiting(flag: Path, me: str) -> bool:
    now = time.time()
    for mark in flag.parent.glob(f"{flag.name}.waiting.*"):
        try:
            fresh = now - mark.stat().st_mtime < FRESH_S
        except FileNotFoundError:
            continue
        if fresh and mark.name != f"{flag.name}.waiting.{me}":
            return True
    return False
