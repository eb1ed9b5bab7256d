"""The limits table applied to a whole LoadSpec: every number finite and inside its bound, named by its path."""
from __future__ import annotations

import math

from loadgen.limits import LIMITS, check, check_leaves
from loadgen.rate_trace.source import trace_of


def check_spec(spec) -> None:
    """Raise ValueError naming the first field of a LoadSpec outside the table (loadgen.limits)."""
    check_leaves(spec)
    check("classes", len(spec.classes) + len(spec.sequences), "classes + sequences")
    for name in ("concurrency", "max_connections", "warmup_s", "drain_s", "late_after_ms", "spin_us"):
        check(name, getattr(spec, name))
    for name in ("duration_s", "max_requests", "stop_when_all_fail_s"):
        if getattr(spec, name) is not None:
            check(name, getattr(spec, name))
    check("rate", spec.rate)
    open_loop = spec.mode == "open"
    _arrival(spec.arrival, spec.rate if open_loop else None, "arrival")
    for i, tc in enumerate(spec.classes):
        _class(tc, f"classes[{i}]")
    for i, seq in enumerate(spec.sequences):
        _sequence(seq, f"sequences[{i}]")
    total = (spec.rate if open_loop else 0.0) + sum(c.rate or 0.0 for c in spec.classes)
    check("rate", total, "the whole load's rate (the shared stream's and the classes' own)")
    in_flight = (0 if open_loop else spec.concurrency) + sum(s.count for s in spec.sequences)
    check("in_flight", in_flight, "concurrency + sequences")


def peak_rate(arrival, rate: float) -> float:
    """Return the highest rate an arrival process reaches from its mean rate (a trace: the rate, its file says the
    rest)."""
    kind = str(arrival.kind)
    if kind == "bursty":
        return rate * (arrival.on_s + arrival.off_s) / arrival.on_s
    if kind == "mmpp":
        cycle = arrival.high_s + arrival.low_s
        return rate * arrival.ratio * cycle / (arrival.ratio * arrival.high_s + arrival.low_s)
    if kind == "ramp":
        return rate * max(1.0, arrival.start_fraction)
    if kind == "step":
        return rate * max(level for _, level in arrival.steps)
    if kind == "rate_trace":  # the trace's peak at the scale that plays its mean at rate
        trace = trace_of(arrival)
        return rate * trace.peak / trace.mean if trace.mean > 0 else rate
    return rate


def _arrival(arrival, rate: float | None, where: str) -> None:
    for name in ("on_s", "high_s", "low_s"):
        check("arrival_s", getattr(arrival, name), f"{where}.{name}")
    for name in ("off_s", "ramp_s"):
        check("pause_s", getattr(arrival, name), f"{where}.{name}")
    for name in ("ratio", "start_fraction"):
        check("arrival_factor", getattr(arrival, name), f"{where}.{name}")
    check("trace_speed", arrival.speed, f"{where}.speed")
    check("trace_speed", arrival.compress, f"{where}.compress")
    check("arrival_steps", len(arrival.steps), f"{where}.steps (how many)")
    for i, (seconds, level) in enumerate(arrival.steps):
        check("pause_s", seconds, f"{where}.steps[{i}] seconds")
        check("arrival_factor", level, f"{where}.steps[{i}] level")
    if rate:
        check("peak_rate", peak_rate(arrival, rate), f"{where} at {rate:g} req/s: its peak")


def _class(tc, where: str) -> None:
    check("share", tc.share, f"{where}.share")
    check("priority", tc.priority, f"{where}.priority")
    check("sla_ms", tc.sla_ms, f"{where}.sla_ms")
    if tc.timeout_ms is not None:
        check("timeout_ms", tc.timeout_ms, f"{where}.timeout_ms")
    if tc.server_timeout_us is not None:
        check("server_timeout_us", tc.server_timeout_us, f"{where}.server_timeout_us")
    if tc.rate is not None:
        check("rate", tc.rate, f"{where}.rate")
    if tc.arrival is not None:
        _arrival(tc.arrival, tc.rate, f"{where}.arrival")
    retry = tc.retry
    check("retry_attempts", retry.max_attempts, f"{where}.retry.max_attempts")
    check("backoff_ms", retry.base_ms, f"{where}.retry.base_ms")
    check("backoff_ms", retry.cap_ms, f"{where}.retry.cap_ms")
    check("backoff_multiplier", retry.multiplier, f"{where}.retry.multiplier")
    check("string_len", tc.string_len[1], f"{where}.string_len (longest)")
    _shape(tc, where)


def _shape(tc, where: str) -> None:
    """Check a class's rows and the values of one input of one request, each -1 at the longest length."""
    shape = tc.shape
    check("batch", shape.batch, f"{where}.shape.batch")
    lengths = shape.lengths()
    longest = max(lengths) if lengths else 1
    check("request_values", longest * shape.batch, f"{where}.shape (longest length × batch)")
    dims = [(f"{where}.shape.dims", shape.dims)] + [(f"{where}.inputs.{i.name}.dims", i.dims) for i in tc.inputs]
    for field, d in dims:
        if d is not None:
            values = math.prod(longest if x == -1 else x for x in d) * shape.batch
            check("request_values", values, f"{field} {list(d)} × batch {shape.batch}")


def _sequence(seq, where: str) -> None:
    check("sequences", seq.count, f"{where}.count")
    for name in ("n", "low", "high"):
        check("sequence_length", getattr(seq.length, name), f"{where}.length.{name}")
    check("think_ms", seq.think_ms, f"{where}.think_ms")
    check("priority", seq.priority, f"{where}.priority")
    check("sla_ms", seq.sla_ms, f"{where}.sla_ms")
    if seq.timeout_ms is not None:
        check("timeout_ms", seq.timeout_ms, f"{where}.timeout_ms")


def check_stream(spec) -> None:
    """Raise ValueError naming the first field of a StreamSpec (streamed generations) outside the table."""
    check_leaves(spec)
    check("concurrency", spec.concurrency)
    check("stream_timeout_s", spec.timeout_s, "timeout_s")
    for name in ("n", "low", "high"):
        LIMITS["sequence_length"].within(what="generation length (tokens)").check(getattr(spec.lengths, name),
                                                                                   f"lengths.{name}")


def request_bytes(tc, plan, batched: bool) -> int:
    """Return the most bytes one request of a class carries, from its planned inputs (loadgen.inputs.tensors.plan_inputs):
    each input sent at the longest variable length; a BYTES element as its 4-byte length and the longest string."""
    from loadgen.inputs.payload import numpy_dtype  # noqa: PLC0415 - numpy only where a model's inputs are known

    lengths = tc.shape.lengths()
    longest, rows = (max(lengths) if lengths else 1), (tc.shape.batch if batched else 1)
    total = 0
    for p in plan:
        if p.send:
            values = rows * math.prod(longest if d == -1 else d for d in p.dims)
            datatype = p.tensor.datatype
            total += values * (4 + tc.string_len[1] if datatype == "BYTES" else numpy_dtype(datatype).itemsize)
    return total


def arrays_bytes(arrays) -> int:
    """Return the bytes of one request variant's arrays as sent (a BYTES element: its 4-byte length and its bytes)."""
    total = 0
    for arr in arrays:
        if arr.dtype.kind == "O":
            total += sum(4 + len(x if isinstance(x, bytes) else str(x).encode()) for x in arr.flat)
        else:
            total += arr.nbytes
    return total
