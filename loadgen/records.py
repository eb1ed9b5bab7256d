"""One record per attempt, and the bus that hands batches of them to every subscriber."""
from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from loadgen.outcome import Outcome

log = logging.getLogger(__name__)

Subscriber = Callable[[list["Record"]], None]


@dataclass(frozen=True, slots=True)
class Record:
    """One attempt at one request; times are seconds since the run started."""

    cls: str
    model: str
    priority: int
    sequence_id: int  # 0 outside sequences
    scheduled_s: float  # when the request was due (the first attempt's slot)
    sent_s: float  # when this attempt went out
    latency_s: float  # from sending to the answer (or to giving up)
    outcome: Outcome
    error: str  # error kind, '' when ok
    attempt: int  # 1 for the first try
    late: bool  # open loop: went out later than its slot allows
    detail: str = ""  # a failure's own words (the server's error text, cut short); '' when ok
    first_s: float | None = None  # a streamed (decoupled) request: from sending to its first response
    responses: int = 0  # a streamed (decoupled) request: responses received (0 for plain requests)

    @property
    def done_s(self) -> float:
        """Return when the attempt ended."""
        return self.sent_s + self.latency_s

    @property
    def lateness_s(self) -> float:
        """Return how long after its slot the first attempt went out."""
        return self.sent_s - self.scheduled_s


class RecordBus:
    """Collect records and deliver them in batches to subscribers (flush() delivers).

    emit() may be called from any thread (the closed loop's workers); records are delivered only on the bus's
    own thread (the one that made it, or bind_thread()): by emit() there when a batch is full, else by flush().
    """

    def __init__(self, subscribers: list[Subscriber] | None = None, batch: int = 64) -> None:
        self.subscribers = list(subscribers or [])
        self.batch = batch
        self._pending: deque[Record] = deque()
        self._owner = threading.get_ident()

    def bind_thread(self) -> None:
        """Deliver on the calling thread from now on (the run's event loop thread)."""
        self._owner = threading.get_ident()

    def emit(self, record: Record) -> None:
        """Queue one record; deliver when the batch is full and this is the bus's thread."""
        self._pending.append(record)
        if len(self._pending) >= self.batch and threading.get_ident() == self._owner:
            self.flush()

    def flush(self) -> None:
        """Deliver pending records to every subscriber; one failing subscriber does not stop the rest."""
        pending = self._pending
        batch = [pending.popleft() for _ in range(len(pending))]  # records emitted meanwhile wait for the next
        if batch:
            self.deliver(batch)

    def deliver(self, batch: list[Record]) -> None:
        """Hand a batch to every subscriber now; one failing subscriber does not stop the rest."""
        for fn in list(self.subscribers):
            try:
                fn(batch)
            except Exception:  # noqa: BLE001 - a sink's bug must not stop the load
                log.exception("record subscriber %r failed", fn)
