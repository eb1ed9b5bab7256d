"""A run whose every request fails stops itself, and says why in the server's words.

A load that only produces errors measures nothing and hides behind healthy-looking rates ("running, 9,000
offered req/s"); the watchdog listens to the record stream and closes the run's bound once every attempt that
ended over `after_s` seconds failed. The run then ends with `Stopped`, whose text names the count and the
latest failure's own words (the CLI prints it, the dashboard's worker reports it as the run's error).
"""
from __future__ import annotations

from collections.abc import Callable

from loadgen.outcome import Outcome
from loadgen.records import Record

MIN_ENDED = 5  # a streak needs at least this many failed attempts: a slow run's first two failures prove little


class Stopped(RuntimeError):
    """The run stopped itself: every request failed."""


class Watchdog:
    """Record subscriber: call stop() once every attempt that ended for `after_s` seconds failed (None: never).

    clock returns run seconds, the records' own time base (LoadRun: the loop's clock minus the run's start).
    Cancelled attempts (the run stopping) neither fail nor succeed; any success starts the streak again.
    """

    def __init__(self, after_s: float | None, stop: Callable[[], None], clock: Callable[[], float],
                 min_ended: int = MIN_ENDED) -> None:
        self.after_s, self.stop, self.clock, self.min_ended = after_s, stop, clock, min_ended
        self.since: float | None = None  # when the first failure of the current streak ended
        self.failed = 0  # failed attempts in the streak
        self.latest = ""  # the streak's latest failure, in its own words
        self.reason: str | None = None  # set once the run was stopped

    def __call__(self, records: list[Record]) -> None:
        """Take a batch of records; stop the run when the streak has lasted after_s."""
        if self.after_s is None or self.reason is not None:
            return
        for r in records:
            if r.outcome is Outcome.CANCELLED:
                continue
            if r.outcome is Outcome.OK:
                self.since, self.failed = None, 0
                continue
            if self.since is None:
                self.since = r.done_s
            self.failed += 1
            self.latest = r.detail or r.error or self.latest
        if self.since is not None and self.failed >= self.min_ended and self.clock() - self.since >= self.after_s:
            n = f"{self.failed:,}"
            self.reason = f"every request failed for {self.after_s:g} s ({n} of {n}): {self.latest}"
            self.stop()

    def check(self) -> None:
        """Raise Stopped with the reason when the watchdog stopped the run."""
        if self.reason is not None:
            raise Stopped(self.reason)
