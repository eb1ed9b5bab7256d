"""The quiet lane while the first pass runs beside the quiet pass: two quiet tests at once, or one that needs it alone.

scripts/lab.sh runs the quiet pass on the workers scripts/host_speed.py allows (on a host as quick as ours, three
where both passes run at once) and, while the first pass runs beside it in its low-weight cgroup, names in
TBL_FIRST_PASS_RUNNING a file that exists until the first pass ends. While it exists a quiet test runs only holding
the lane (tests/conftest.py says which test takes it how):
- SHARED, most: FILE.lock shared and one of WIDTH slot files (two at once, as in a pass of their own);
- ALONE: FILE.lock exclusive — the 20 ms A/B, whose p99 spiked to 112 ms in a trial beside the first pass's start and
  a second quiet test;
- AFTER: no lock; it waits until the first pass has ended — the guided scenarios' tail claims: `patterns` missed its
  bound beside another quiet scenario and the first pass (2026-12-04, morning), and alone in the lane beside the
  first pass's last minute (its servers starting and stopping) too (docs/MEASUREMENTS.md#the-test-suite).
The lane is granted first come, first served — a worker waits while another has waited longer — so a test that
needs it alone is not passed over by its neighbour's next shared test, and workers take turns (none is left with a
long queue for the end). Once the file is gone the workers run at once (after the first pass two quiet tests left
the cores 65-90 % idle).
"""
from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

POLL_S = 0.2
WIDTH = 2  # quiet tests at once beside the first pass (the quiet pass may have more workers: they wait their turn)
FRESH_S = 5.0  # a waiting mark not refreshed for this long is a worker that stopped waiting (killed): not in line


SHARED, ALONE, AFTER = "shared", "alone", "after"


@contextmanager
def in_the_quiet_lane(flag: str | None, kind: str, me: str | None = None) -> Iterator[None]:
    """Run the body in the quiet lane while `flag` (a path) exists, as `kind` says (SHARED, ALONE or AFTER).

    No lock without a flag or once it goes; a lock taken is held until the body ends."""
    if not flag:
        yield
        return
    me = me or f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}"
    running = Path(flag)
    if kind == AFTER:  # not in line: a worker waiting for the end would hold back every test behind it
        while running.exists():
            time.sleep(POLL_S)
        yield
        return
    alone = kind == ALONE
    since = time.time()
    with ExitStack() as held:
        lock = held.enter_context(open(_sibling(running, "lock"), "a"))
        slots = [held.enter_context(open(_sibling(running, f"slot{i}"), "a")) for i in range(WIDTH)]
        try:
            while running.exists():
                _mark_waiting(running, me, since)
                if _first_in_line(running, me, since) and _take(lock, slots, alone):
                    break
                time.sleep(POLL_S)
        finally:
            _sibling(running, f"waiting.{me}").unlink(missing_ok=True)
        yield


def _sibling(flag: Path, suffix: str) -> Path:
    return flag.with_name(f"{flag.name}.{suffix}")


def _mark_waiting(flag: Path, me: str, since: float) -> None:
    """Write (by rename: never read half-written) when this worker began to wait; each write keeps the mark fresh."""
    draft = _sibling(flag, f"draft-{me}")
    draft.write_text(repr(since))
    os.replace(draft, _sibling(flag, f"waiting.{me}"))


def _first_in_line(flag: Path, me: str, since: float) -> bool:
    """Return False while a fresh mark of another worker began to wait before `since` (a tie: the lower name)."""
    now = time.time()
    for mark in flag.parent.glob(f"{flag.name}.waiting.*"):
        other = mark.name[len(f"{flag.name}.waiting."):]
        if other == me:
            continue
        try:
            fresh = now - mark.stat().st_mtime < FRESH_S
            began = float(mark.read_text())
        except (FileNotFoundError, ValueError):
            continue
        if fresh and (began, other) < (since, me):
            return False
    return True


def _take(lock, slots: list, alone: bool) -> bool:
    """Take the lane: the lock exclusive when `alone`; else one of the WIDTH slots and the lock shared (or neither)."""
    if alone:
        return _flock(lock, fcntl.LOCK_EX)
    slot = next((f for f in slots if _flock(f, fcntl.LOCK_EX)), None)
    if slot is None:
        return False
    if _flock(lock, fcntl.LOCK_SH):
        return True
    fcntl.flock(slot, fcntl.LOCK_UN)
    return False


def _flock(file, how: int) -> bool:
    try:
        fcntl.flock(file, how | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
