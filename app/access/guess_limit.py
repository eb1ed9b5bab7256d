"""Slow operator-token guessing down: a doubling wait after each wrong token, a lockout after too many."""
from __future__ import annotations

import hmac
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GuessPolicy:
    """After the n-th wrong token within window_s, the next try waits first_delay_s * 2**(n-1) (at most
    max_delay_s); max_failures wrong tokens within window_s lock the key for window_s, the right token too."""

    first_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_failures: int = 10
    window_s: float = 600.0

    def delay_s(self, failures: int) -> float:
        """Return the wait after `failures` wrong tokens in the window."""
        if failures <= 0 or self.first_delay_s <= 0:
            return 0.0
        return min(self.first_delay_s * 2 ** min(failures - 1, 62), self.max_delay_s)


EVERYONE = GuessPolicy(first_delay_s=0.0, max_failures=50)  # all clients together: a lockout, no per-try wait


@dataclass(frozen=True)
class Refusal:
    """Why a try is not even compared now, and in how many seconds one may be."""

    reason: str
    retry_in_s: float


@dataclass(frozen=True)
class GuessOutcome:
    """The result of one try: accepted, or refused with the reason to show; checked: compared with the token (False
    when a wait or a lockout held it back)."""

    accepted: bool
    reason: str
    checked: bool = True


@dataclass
class _Record:
    failures: list[float] = field(default_factory=list)
    locked_until: float = 0.0


class GuessLimiter:
    """Wrong tokens per key (a client address, a session, everyone): thread-safe, bounded in memory."""

    def __init__(self, policy: GuessPolicy = GuessPolicy(), clock: Callable[[], float] = time.monotonic,
                 max_keys: int = 10_000) -> None:
        self.policy, self.clock, self.max_keys = policy, clock, max_keys
        self._records: dict[str, _Record] = {}
        self._lock = threading.Lock()

    def refusal(self, keys: Sequence[str]) -> Refusal | None:
        """Return why no try may be made now for these keys (the longest wait of any), or None."""
        with self._lock:
            now = self.clock()
            found = [r for r in (self._refusal(key, now) for key in keys) if r is not None]
        return max(found, key=lambda r: r.retry_in_s, default=None)

    def failed(self, keys: Sequence[str]) -> None:
        """Record a wrong token for each key; lock those that reach max_failures in the window."""
        with self._lock:
            now = self.clock()
            for key in keys:
                record = self._records.pop(key, None) or _Record()
                self._records[key] = record  # most recent last: the oldest are dropped first
                record.failures = [t for t in record.failures if now - t < self.policy.window_s] + [now]
                if len(record.failures) >= self.policy.max_failures:
                    record.locked_until = now + self.policy.window_s
            while len(self._records) > self.max_keys:
                del self._records[next(iter(self._records))]

    def forget(self, keys: Sequence[str]) -> None:
        """Drop the wrong tokens of these keys (the right token was given)."""
        with self._lock:
            for key in keys:
                self._records.pop(key, None)

    def _refusal(self, key: str, now: float) -> Refusal | None:
        record = self._records.get(key)
        if record is None:
            return None
        if record.locked_until > now:
            return Refusal(f"locked: {self.policy.max_failures} wrong tokens within "
                           f"{_span(self.policy.window_s)}, so every token, the right one too, is refused for "
                           f"{_span(record.locked_until - now)} more", record.locked_until - now)
        recent = [t for t in record.failures if now - t < self.policy.window_s]
        ready_at = recent[-1] + self.policy.delay_s(len(recent)) if recent else now
        if ready_at > now:
            return Refusal(f"{len(recent)} wrong token{'s' * (len(recent) > 1)} lately: wait "
                           f"{_span(ready_at - now)} before the next try", ready_at - now)
        return None


class TokenExchange:
    """Compares a typed token with the operator's, unless the client's, the session's or everyone's wrong tries
    hold it back; the caller keeps only the yes/no, never the typed text."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, per_key: GuessPolicy = GuessPolicy(),
                 everyone: GuessPolicy = EVERYONE) -> None:
        self.keys = GuessLimiter(per_key, clock)
        self.everyone = GuessLimiter(everyone, clock)

    def refusal(self, client: str, session: str) -> Refusal | None:
        """Return why a try would be refused now without being compared, or None."""
        held = [r for r in (self.keys.refusal(_keys(client, session)), self.everyone.refusal(["everyone"])) if r]
        return max(held, key=lambda r: r.retry_in_s, default=None)

    def exchange(self, typed: str, token: str, client: str, session: str) -> GuessOutcome:
        """Return whether `typed` is the operator token, recording a wrong one; a held-back try is not compared."""
        held = self.refusal(client, session)
        if held is not None:
            return GuessOutcome(False, f"not checked: {held.reason}", checked=False)
        if hmac.compare_digest(typed.encode(), token.encode()):
            self.keys.forget(_keys(client, session))
            return GuessOutcome(True, "operator token accepted for this session")
        self.keys.failed(_keys(client, session))
        self.everyone.failed(["everyone"])
        after = self.refusal(client, session)
        return GuessOutcome(False, "wrong operator token" + (f"; {after.reason}" if after else ""))


def _keys(client: str, session: str) -> list[str]:
    return [f"client {client}", f"session {session}"]


def _span(seconds: float) -> str:
    seconds = math.ceil(seconds)
    return f"{seconds} s" if seconds < 120 else f"{math.ceil(seconds / 60)} min"
