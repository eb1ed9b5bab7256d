"""Statistics of streamed answers (decoupled models) inside a stats Bucket: responses, time to first response and
time between responses, merged like latencies (percentiles from merged samples, never averaged).

Time between responses is one value per request, (latency - first) / (responses - 1), over requests of two
responses or more: latency runs to the final response, so a model that sends its final flag well after its last
data response reads slower here than it streams. Only successful requests count, in the second they ended.
"""
from __future__ import annotations

import base64

from loadgen.histogram import QUANTILES, Samples
from loadgen.outcome import Outcome
from loadgen.records import Record

_SAMPLES = ("first", "gaps", "held_first", "held_gaps")
_P50, _P99 = QUANTILES.index(50), QUANTILES.index(99)


class Responses:
    """Data responses of successful streamed requests, and their time-to-first and between-responses samples."""

    __slots__ = ("count", "first", "gaps", "held_first", "held_gaps", "_samples")

    def __init__(self, samples=Samples) -> None:
        self.count = 0
        self._samples = samples
        self.first, self.gaps = samples(), samples()  # seconds
        self.held_first, self.held_gaps = samples(), samples()  # requests in flight during a config reload

    def add(self, r: Record, held: bool = False) -> None:
        """Count one ended attempt (plain requests and failures add nothing)."""
        if r.outcome is not Outcome.OK or r.first_s is None:
            return
        self.count += r.responses
        (self.held_first if held else self.first).add(r.first_s)
        if r.responses >= 2:
            (self.held_gaps if held else self.gaps).add(max(0.0, r.latency_s - r.first_s) / (r.responses - 1))

    def merge(self, other: Responses) -> None:
        """Add another bucket's responses to these."""
        self.count += other.count
        for name in _SAMPLES:
            getattr(self, name).merge(getattr(other, name))

    def to_dict(self) -> dict:
        """Return JSON-ready values (samples as base64 float64); empty for a bucket of plain requests."""
        if not self.count and not len(self.first) and not len(self.held_first):
            return {}
        return {"responses": self.count,
                **{name: base64.b64encode(getattr(self, name).values.tobytes()).decode() for name in _SAMPLES}}

    def load(self, data: dict) -> None:
        """Take to_dict()'s values (absent keys: nothing streamed)."""
        self.count = int(data.get("responses", 0))
        for name in _SAMPLES:
            getattr(self, name).values.frombytes(base64.b64decode(data.get(name, "")))

    def row(self, seconds: float, include_held: bool = True) -> dict:
        """Return responses, responses/s and the first/gap p50 and p99 in ms with their sample counts."""
        row = {"responses": self.count, "responses_rps": self.count / seconds if seconds > 0 else 0.0}
        for key, own, held in (("first", self.first, self.held_first), ("gap", self.gaps, self.held_gaps)):
            samples = own
            if include_held and len(held):
                samples = self._samples()
                samples.merge(own)
                samples.merge(held)
            row[f"{key}_n"] = len(samples)
            q = samples.quantiles_s() if len(samples) else None
            row[f"{key}_p50_ms"] = q[_P50] * 1000.0 if q else None
            row[f"{key}_p99_ms"] = q[_P99] * 1000.0 if q else None
        return row

