"""Traffic presets of the pages: a small form turned into a loadgen LoadSpec."""
from __future__ import annotations

from dataclasses import dataclass

from loadgen.shapes import LengthSpec
from loadgen.spec import ArrivalSpec, LoadSpec, Mode, RetryKind, RetryPolicy, SequenceSpec, TrafficClass

MIXES = ("one class", "interactive + batch")
ARRIVALS = ("poisson", "constant", "bursty", "mmpp", "ramp")
RETRIES = ("none", "immediate", "backoff")


@dataclass(frozen=True)
class TrafficForm:
    """What the traffic panel asks for."""

    model: str
    mode: str = "closed"
    concurrency: int = 8
    rate: float = 200.0
    arrival: str = "poisson"
    duration_s: float = 300.0
    mix: str = "one class"
    interactive_share: float = 0.3
    retry: str = "none"
    timeout_ms: float = 5000.0
    sla_ms: float = 50.0
    sequences: int = 0  # > 0: that many concurrent sequences instead of classes
    sequence_length: int = 20


def build_spec(form: TrafficForm) -> LoadSpec:
    """Return the LoadSpec for a form; ValueError names what is wrong."""
    retry = RetryPolicy(kind=RetryKind(form.retry), max_attempts=3 if form.retry != "none" else 1)
    if form.sequences > 0:
        seq = SequenceSpec(model=form.model, count=form.sequences, length=LengthSpec(kind="geometric", n=form.sequence_length),
                           timeout_ms=form.timeout_ms, sla_ms=form.sla_ms)
        return LoadSpec(mode=Mode.CLOSED, concurrency=0, duration_s=form.duration_s, model=form.model, classes=(),
                        sequences=(seq,))
    if form.mix == "interactive + batch":
        share = min(max(form.interactive_share, 0.01), 0.99)
        classes = (
            TrafficClass(name="interactive", share=share, priority=1, timeout_ms=form.timeout_ms, sla_ms=form.sla_ms,
                         retry=retry),
            TrafficClass(name="batch", share=1 - share, priority=2, timeout_ms=form.timeout_ms, sla_ms=form.sla_ms * 10,
                         retry=retry),
        )
    else:
        classes = (TrafficClass(name="default", timeout_ms=form.timeout_ms, sla_ms=form.sla_ms, retry=retry),)
    return LoadSpec(mode=Mode(form.mode), concurrency=form.concurrency, rate=form.rate,
                    arrival=ArrivalSpec(kind=form.arrival), duration_s=form.duration_s, model=form.model, classes=classes)
