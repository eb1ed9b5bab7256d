"""The twin's load from the lab's own traffic description (a loadgen LoadSpec): what the twin should send."""
from __future__ import annotations

from loadgen.spec import ArrivalKind, LoadSpec, Mode

from app.twin.load import Load, ClassShare

DURATION_S = 30.0  # long enough for a p99 of a few thousand requests, short enough to rank a space in seconds
WARMUP_S = 3.0  # the queue fills first: figures leave these seconds out


class Unmodelled(ValueError):
    """The traffic is of a kind the twin does not model (sequences, a file of arrival times...)."""


def load_of(spec: LoadSpec, duration_s: float = DURATION_S, rate: float | None = None,
            concurrency: int | None = None) -> Load:
    """Return the twin's load for a spec (rate / concurrency: instead of the spec's): its classes by share and
    priority, its arrivals (Poisson, bursty or an MMPP as bursts, a ramp or steps and a rate trace as rate steps)."""
    if spec.sequences:
        raise Unmodelled("the twin does not model sequences (sequence batching): no prediction for stateful traffic")
    classes = tuple(ClassShare(c.name, c.share if c.rate is None else 0.0, c.priority) for c in spec.classes)
    own = sum(c.rate or 0.0 for c in spec.classes)
    warm = {"warmup_s": min(WARMUP_S, duration_s / 4)}
    if spec.mode == Mode.CLOSED:
        return Load.closed(int(concurrency or spec.concurrency), duration_s, **warm).with_classes(*_weights(classes))
    total = float(rate if rate is not None else spec.rate)
    shared = total  # the classes without a rate of their own share the load's rate
    if own:  # classes with their own stream: shares in proportion to the rates
        classes = tuple(ClassShare(c.name, (c.rate or 0.0) if c.rate is not None else shared * c.share
                                     / max(1e-9, sum(x.share for x in spec.classes if x.rate is None)),
                                     c.priority) for c in spec.classes)
        total = shared + own
    arrival = spec.arrival
    kind = arrival.kind
    if kind in (ArrivalKind.POISSON, ArrivalKind.CONSTANT):
        load = Load.poisson(total, duration_s, **warm)
    elif kind == ArrivalKind.BURSTY:  # on/off: bursts at (on+off)/on × the mean
        ratio = (arrival.on_s + arrival.off_s) / max(arrival.on_s, 1e-9)
        load = Load.bursty(total, duration_s, ratio=max(ratio, 1.0), burst_s=arrival.on_s, quiet_s=arrival.off_s,
                           **warm)
    elif kind == ArrivalKind.MMPP:
        load = Load.bursty(total, duration_s, ratio=arrival.ratio, burst_s=arrival.high_s, quiet_s=arrival.low_s,
                           **warm)
    elif kind == ArrivalKind.RAMP:
        steps = [(arrival.ramp_s * k / 10, total * (arrival.start_fraction + (1 - arrival.start_fraction) * k / 10))
                 for k in range(11)]
        load = Load.trace(steps, duration_s, **warm)
    elif kind == ArrivalKind.STEP:
        t, steps = 0.0, []
        for length, factor in arrival.steps:
            steps.append((t, total * factor))
            t += length
        load = Load.trace(steps, duration_s, **warm)
    elif kind == ArrivalKind.RATE_TRACE:
        from loadgen.rate_trace.trace_load import played_curve  # noqa: PLC0415 - reads the trace's file

        curve = played_curve(arrival, total)
        load = Load.trace(curve, min(duration_s, max(curve[-1][0], 1.0)) if curve else duration_s, **warm)
    else:
        raise Unmodelled(f"the twin does not model {kind} arrivals (a file of arrival times): no prediction")
    return load.with_classes(*_weights(classes))


def _weights(classes: tuple[ClassShare, ...]) -> tuple[ClassShare, ...]:
    """Return the classes with a usable share each (a class of share 0 keeps a tiny one: it is still named)."""
    return tuple(ClassShare(c.name, max(c.share, 1e-6), c.priority) for c in classes) or (ClassShare(),)
