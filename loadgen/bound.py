"""When a run stops: a duration, a number of requests, or a stop asked for at any moment.

A scheduled request (the open loop's) is granted by when it was due, not by when the loop got to it: an arrival due
before the deadline is sent, late, even when the loop reaches it after the deadline (a starved host's last
arrivals are part of the schedule played, not lost)."""
from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable


class Bound:
    """Grant requests until the deadline, the request budget or a stop; `closed` is set then.

    Made on the run's event loop; take(), is_open(), may_retry() and close() may also be called from the closed
    loop's worker threads (the budget is counted under a lock, `closed` is set on the loop).
    """

    def __init__(self, clock: Callable[[], float], duration_s: float | None = None,
                 max_requests: int | None = None, start: float | None = None) -> None:
        """start: when the run's schedule starts on the clock (the deadline is duration_s after it; default now)."""
        self.clock = clock
        self.deadline = (clock() if start is None else start) + duration_s if duration_s else math.inf
        self.max_requests = max_requests if max_requests is not None else math.inf
        self.issued = 0
        self.stopped = False  # a stop, a crash or the all-fail watchdog: nothing more is sent
        self.closed = asyncio.Event()
        self._shut = False  # no new requests (what `closed` says, readable from any thread)
        self._lock = threading.Lock()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._timer = None
        if duration_s:
            self._timer = self._loop.call_at(self.deadline, self.finish)  # then only what was due before it goes

    def take(self) -> bool:
        """Count one more request if the run is still open; return whether it may go."""
        if self._shut:
            return False
        if self.expired:
            self.finish()
            return False
        with self._lock:
            if self._shut:
                return False
            return self._count()

    def take_due(self, due_at: float) -> bool:
        """Count one more request scheduled for due_at (on the clock): granted when it was due before the deadline,
        however late it is sent, unless the run was stopped or the budget is spent."""
        if due_at >= self.deadline:
            return False
        with self._lock:
            if not self.sends_due():
                return False
            return self._count()

    def sends_due(self) -> bool:
        """Return True while requests scheduled before the deadline may still go (no stop, budget left)."""
        return not self.stopped and self.issued < self.max_requests

    def _count(self) -> bool:
        self.issued += 1
        if self.issued >= self.max_requests:
            self.finish()  # the budget is spent; requests already out may still retry
        return True

    @property
    def expired(self) -> bool:
        """True once the deadline has passed: only requests due before it still go (retries end by the clock)."""
        return self.clock() >= self.deadline

    def is_open(self) -> bool:
        """Return True while new requests may start."""
        return not self._shut and not self.expired

    def may_retry(self) -> bool:
        """Return True unless the run was stopped or its time is up (a spent budget still allows retries)."""
        return not self.stopped and not self.expired

    def finish(self) -> None:
        """Grant no new requests; retries of requests already out stay allowed until a stop or the deadline."""
        self._shut = True
        if threading.get_ident() == self._loop_thread:
            self.closed.set()
        elif not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self.closed.set)
            except RuntimeError:  # the loop closed just now: nobody waits any more
                pass

    def close(self) -> None:
        """Stop granting requests and retries."""
        if self._timer is not None and threading.get_ident() == self._loop_thread:
            self._timer.cancel()
        self.stopped = True
        self.finish()
