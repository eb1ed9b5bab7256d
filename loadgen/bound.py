"""When a run stops: a duration, a number of requests, or a stop asked for at any moment."""
from __future__ import annotations

import asyncio
import math
from collections.abc import Callable


class Bound:
    """Grant requests until the deadline, the request budget or a stop; `closed` is set then."""

    def __init__(self, clock: Callable[[], float], duration_s: float | None = None,
                 max_requests: int | None = None) -> None:
        self.clock = clock
        self.deadline = clock() + duration_s if duration_s else math.inf
        self.max_requests = max_requests if max_requests is not None else math.inf
        self.issued = 0
        self.stopped = False
        self.closed = asyncio.Event()
        self._timer = None
        if duration_s:
            self._timer = asyncio.get_running_loop().call_at(self.deadline, self.close)

    def take(self) -> bool:
        """Count one more request if the run is still open; return whether it may go."""
        if self.closed.is_set():
            return False
        if self.clock() >= self.deadline:
            self.close()
            return False
        self.issued += 1
        if self.issued >= self.max_requests:
            self.closed.set()  # the budget is spent; requests already out may still retry
        return True

    def is_open(self) -> bool:
        """Return True while new requests may start."""
        return not self.closed.is_set() and self.clock() < self.deadline

    def may_retry(self) -> bool:
        """Return True unless the run was stopped or its time is up (a spent budget still allows retries)."""
        return not self.stopped and self.clock() < self.deadline

    def close(self) -> None:
        """Stop granting requests and retries."""
        if self._timer is not None:
            self._timer.cancel()
        self.stopped = True
        self.closed.set()
