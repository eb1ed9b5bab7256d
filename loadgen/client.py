"""The one request path: send, time out, classify, retry; one record per attempt.

RequestPath runs on the event loop (open loop, sequences); BlockingPath is the same path for a thread holding
its own blocking connection (the closed loop's workers, Locust's users).
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from random import Random

from loadgen.classes import Target
from loadgen.connection import BlockingConnection, ConnectError, Response
from loadgen.outcome import Outcome, classify, classify_exception, exception_detail, response_detail
from loadgen.pool import ConnectionPool
from loadgen.records import Record, RecordBus
from loadgen.retry import CONNECT_PAUSE_S, backoff_s, retried, should_retry

Check = Callable[[Response], bool]
WRONG_OUTPUT = "answered, but the answer failed the output check"


class RequestPath:
    """Send requests over a connection pool and emit their records; shared by every driver."""

    def __init__(self, pool: ConnectionPool, bus: RecordBus, clock: Callable[[], float], t0: float,
                 rng: Random, late_after_s: float = 0.001, may_retry: Callable[[], bool] = lambda: True) -> None:
        self.pool, self.bus, self.clock, self.t0 = pool, bus, clock, t0
        self.rng, self.late_after_s, self.may_retry = rng, late_after_s, may_retry

    async def send(self, target: Target, data: bytes, scheduled_s: float | None = None, sequence_id: int = 0,
                   check: Check | None = None) -> Record:
        """Send one request (retrying per the target's policy); return the last attempt's record."""
        # scheduled_s is the open-loop slot; None (closed loop) means "whenever it goes out".
        return await retried(lambda attempt, slot: self._attempt(target, data, slot, sequence_id, check, attempt),
                             target.retry, self.may_retry, self.rng, scheduled_s)

    async def _attempt(self, target: Target, data: bytes, scheduled_s: float | None, sequence_id: int,
                       check: Check | None, attempt: int) -> Record:
        clock, t0, pool = self.clock, self.t0, self.pool
        conn, detail = None, ""
        try:
            conn = await pool.acquire()
            sent = clock() - t0
            response = await conn.request(data, target.timeout_s)
        except asyncio.CancelledError:
            if conn is not None:
                pool.discard(conn)
                self._emit(target, sequence_id, scheduled_s, sent, Outcome.CANCELLED, "cancelled", attempt)
            raise
        except (TimeoutError, ConnectionError) as exc:
            detail = exception_detail(exc)
            if conn is None:
                sent = clock() - t0
                outcome, error = Outcome.ERROR, "connect"
            else:
                pool.discard(conn)
                outcome, error = classify_exception(exc)
        else:
            pool.release(conn)
            outcome, error = classify(response)
            if outcome is not Outcome.OK:
                detail = response_detail(response)
            elif check is not None and not check(response):
                outcome, error, detail = Outcome.WRONG_OUTPUT, "wrong_output", WRONG_OUTPUT
        return self._emit(target, sequence_id, scheduled_s, sent, outcome, error, attempt, detail)

    def _emit(self, target: Target, sequence_id: int, scheduled_s: float | None, sent: float, outcome: Outcome,
              error: str, attempt: int, detail: str = "") -> Record:
        record = _record(target, sequence_id, scheduled_s, sent, self.clock() - self.t0 - sent, outcome, error,
                         attempt, self.late_after_s, detail)
        self.bus.emit(record)
        return record


class BlockingPath:
    """The request path for threads: the same attempts, outcomes, retries and records over a blocking connection.

    `aborted` (set from any thread) makes requests in flight end as cancelled and waits between attempts end.
    """

    def __init__(self, bus: RecordBus, clock: Callable[[], float] = time.monotonic, t0: float | None = None,
                 rng: Random | None = None, may_retry: Callable[[], bool] = lambda: True) -> None:
        self.bus, self.clock = bus, clock
        self.t0 = clock() if t0 is None else t0
        self.rng = rng or Random()  # noqa: S311 - backoff jitter, not security
        self.may_retry = may_retry
        self.aborted = threading.Event()

    def send(self, conn: BlockingConnection, target: Target, data: bytes) -> Record:
        """Send one request on conn (retrying per the target's policy); return the last attempt's record."""
        attempt = 1
        while True:
            record = self._attempt(conn, target, data, attempt)
            if record.outcome is Outcome.CANCELLED:
                return record
            if record.error == "connect" and self.aborted.wait(CONNECT_PAUSE_S):  # the server is down: do not spin
                return record
            if not (should_retry(target.retry, record.outcome, attempt) and self.may_retry()):
                return record
            delay = backoff_s(target.retry, attempt, self.rng)
            if delay > 0 and self.aborted.wait(delay):
                return record
            attempt += 1

    def _attempt(self, conn: BlockingConnection, target: Target, data: bytes, attempt: int) -> Record:
        clock, t0 = self.clock, self.t0
        sent = clock() - t0
        detail = ""
        try:
            response = conn.request(data, target.timeout_s)
        except ConnectError as exc:
            outcome, error, detail = Outcome.ERROR, "connect", exception_detail(exc)
        except (TimeoutError, OSError) as exc:
            if self.aborted.is_set():
                outcome, error = Outcome.CANCELLED, "cancelled"
            else:
                (outcome, error), detail = classify_exception(exc), exception_detail(exc)
        else:
            outcome, error = classify(response)
            if outcome is not Outcome.OK:
                detail = response_detail(response)
        record = _record(target, 0, None, sent, clock() - t0 - sent, outcome, error, attempt, 0.0, detail)
        self.bus.emit(record)
        return record


def _record(target: Target, sequence_id: int, scheduled_s: float | None, sent: float, latency_s: float,
            outcome: Outcome, error: str, attempt: int, late_after_s: float, detail: str = "") -> Record:
    """Return the record of one attempt (scheduled_s None: the closed loop, due when it went out)."""
    if scheduled_s is None:
        scheduled_s = sent
    late = attempt == 1 and sent - scheduled_s > late_after_s
    return Record(target.cls, target.model, target.priority, sequence_id, scheduled_s, sent, latency_s, outcome,
                  error, attempt, late, detail)
