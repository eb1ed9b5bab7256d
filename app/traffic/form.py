"""Traffic presets of the pages: a small form turned into a loadgen LoadSpec."""
from __future__ import annotations

from dataclasses import dataclass, replace
import time
from pathlib import Path

from google.protobuf import json_format
from tritonclient.grpc.model_config_pb2 import ModelConfig

from loadgen.inputs.input_data import read_data
from loadgen.limits import LIMITS as LOAD_LIMITS, Limit, check_request_bytes
from loadgen.inputs.tensors import plan_inputs, sent_shape
from loadgen.inputs.metadata import ModelInfo, info_from_config
from loadgen.inputs.shapes import LengthSpec
from loadgen.rate_trace.rate_trace import RateTrace, TraceError
from loadgen.rate_trace.files import write_rate_csv
from loadgen.rate_trace.trace_load import scale_for, trace_load, trace_of
from loadgen.rate_trace.prometheus_range import fetch_rate_trace
from loadgen.rate_trace.wall_clock import asked_rate, is_rate_trace, trace_text
from loadgen.spec import (ArrivalKind, ArrivalSpec, InputSpec, LoadSpec, Mode, RetryKind, RetryPolicy, SequenceSpec,
                          TrafficClass)
from loadgen.spec_limits import arrays_bytes, request_bytes
from loadgen.behind import behind, behind_text
from loadgen.stats import ALL

MIXES = ("one class", "interactive + batch")
ARRIVALS = ("poisson", "constant", "bursty", "mmpp", "ramp", "rate_trace")
TRACE_PROCESSES = ("poisson", "constant")  # arrivals inside each step of a rate trace
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
    shapes: tuple[tuple[str, str], ...] = ()  # (input, dims as typed: "16", "3,224,224") for inputs served with a -1
    send: tuple[str, ...] = ()  # optional inputs to send (the others are left out)
    data: str = ""  # real inputs: a perf_analyzer JSON file or a folder of .npy files; empty: random values
    trace: str = "flash_crowd"  # rate_trace: a shipped trace's name or a rate file's path
    compress: float = 6.0  # rate_trace: recorded seconds per played second
    scale: float = 1.0  # rate_trace: rate multiplier; the rate is then the played mean (trace mean × scale)
    trace_class: str = ""  # rate_trace: play one recorded class's rates (empty: the total)
    trace_process: str = "poisson"  # rate_trace: arrivals inside each step, poisson or constant


# The form's fields: their bounds in the one table of load bounds (loadgen.limits), with the form's floors (the least
# value worth starting from the panel) and the panel's words. A typed value outside is refused, never replaced.
LIMITS: dict[str, Limit] = {
    "concurrency": LOAD_LIMITS["concurrency"].within(low=1),
    "rate": LOAD_LIMITS["rate"].within(low=1.0),
    "duration_s": LOAD_LIMITS["duration_s"].within(low=5.0, what="stop after (s)"),
    "timeout_ms": LOAD_LIMITS["timeout_ms"].within(low=10.0),
    "sla_ms": LOAD_LIMITS["sla_ms"].within(low=1.0),
    "interactive_share": Limit("interactive share", 0.01, 0.99),  # a fraction of the form's two classes
    "sequences": LOAD_LIMITS["sequences"],
    "sequence_length": LOAD_LIMITS["sequence_length"].within(low=2, what="mean sequence length"),
}


def problems(form: TrafficForm, config: ModelConfig | None = None) -> list[str]:
    """Return what is wrong with a form, one sentence per field (empty when it can start); with the model's served
    config, its inputs' shapes too."""
    out = _input_problems(form, config) if not form.sequences else []
    traced = plays_trace(form)
    skip = ("rate", "duration_s") if traced else ()  # a trace sets both: its played mean and its played span
    out += [wrong for name, limit in LIMITS.items()
            if name not in skip and (wrong := limit.problem(getattr(form, name))) is not None]
    if form.mode not in ("closed", "open"):
        out.append(f"load mode must be closed or open, not {form.mode!r}")
    if form.arrival not in ARRIVALS:
        out.append(f"arrivals must be one of {', '.join(ARRIVALS)}")
    if traced:
        wrong = trace_problem(form)
        out += [wrong] if wrong else []
    return out


def plays_trace(form: TrafficForm) -> bool:
    """Return True when the form plays a rate trace (open loop, arrivals 'rate_trace', no sequences)."""
    return form.arrival == "rate_trace" and form.mode == "open" and not form.sequences


def trace_arrival(form: TrafficForm) -> ArrivalSpec:
    """Return the rate_trace arrival of a form (ValueError when its fields cannot make one)."""
    if not form.trace.strip():
        raise TraceError("rate trace: choose a shipped trace, give the path of a rate file, or import one from "
                         "Prometheus")
    if form.trace_process not in TRACE_PROCESSES:
        raise TraceError(f"arrivals inside each step must be {' or '.join(TRACE_PROCESSES)}, not "
                         f"{form.trace_process!r}")
    return ArrivalSpec(kind=ArrivalKind.RATE_TRACE, rate_trace=form.trace.strip(), compress=form.compress,
                       process=form.trace_process, trace_class=form.trace_class or None)


def trace_problem(form: TrafficForm) -> str | None:
    """Return what is wrong with a form's trace (unreadable, unknown class, compress or scale out of bounds)."""
    try:
        arrival = trace_arrival(form)
        trace_text(arrival, trace_of(arrival).mean * form.scale)  # reads, and checks the playback
    except (TraceError, ValueError, ZeroDivisionError) as exc:
        return str(exc)
    return None


def with_trace_rate(form: TrafficForm) -> TrafficForm:
    """Return the form with its rate = the trace's played mean (trace mean × scale); unchanged when the trace
    cannot be read (problems() says why)."""
    if not plays_trace(form):
        return form
    try:
        return replace(form, rate=round(trace_of(trace_arrival(form)).mean * form.scale, 6))
    except (TraceError, ValueError):
        return form


def form_trace_text(form: TrafficForm) -> str:
    """Return the form's trace in words (description, played span, mean and peak), or what is wrong with it."""
    try:
        arrival = trace_arrival(form)
        return trace_text(arrival, trace_of(arrival).mean * form.scale)
    except (TraceError, ValueError) as exc:
        return str(exc)


def served(config: ModelConfig) -> ModelInfo:
    """Return a served config's inputs and outputs as the load generator sees them."""
    return info_from_config(json_format.MessageToDict(config, preserving_proto_field_name=True), config.name)


def parse_dims(text: str) -> tuple[int, ...] | None:
    """Return dims typed as '16', '3, 224, 224' or '[3,224,224]' (None when empty); ValueError when not numbers."""
    text = text.strip().strip("[]()").strip()
    if not text:
        return None
    return tuple(int(d) for d in text.replace(" ", ",").split(",") if d)


def form_inputs(form: TrafficForm) -> dict:
    """Return the TrafficClass fields of a form's inputs: per-input dims and sends, and the data path."""
    dims = {name: parse_dims(text) for name, text in form.shapes}
    names = [n for n in dict.fromkeys([*dims, *form.send]) if dims.get(n) is not None or n in form.send]
    specs = tuple(InputSpec(n, dims=dims.get(n), send=True if n in form.send else None) for n in names)
    return {"inputs": specs, "data": form.data.strip() or None}


def input_rows(form: TrafficForm, config: ModelConfig) -> list[dict]:
    """Return one row per served input: its datatype and dims, whether optional, and the shape a request sends."""
    info = served(config)
    try:
        tc = TrafficClass(**form_inputs(form))
        sends = {p.tensor.name: sent_shape(tc, info, p) for p in plan_inputs(tc, info)} if not tc.data else {}
    except ValueError:
        sends = {}
    return [{"input": t.name, "datatype": t.datatype, "dims": str(list(t.dims)),
             "optional": "yes" if t.optional else "",
             "sends": "from the data" if form.data.strip() else sends.get(t.name, "?")} for t in info.inputs]


def _input_problems(form: TrafficForm, config: ModelConfig | None) -> list[str]:
    out = []
    for name, text in form.shapes:
        try:
            parse_dims(text)
        except ValueError:
            out.append(f"the shape of {name} must be whole numbers separated by commas (e.g. 16 or 3,224,224); "
                       f"{text!r} was typed")
    data = form.data.strip()
    if data and not Path(data).expanduser().exists():
        out.append(f"input data {data} is not there: give a perf_analyzer JSON file or a folder of .npy files")
    if out or config is None:
        return out
    try:
        tc = TrafficClass(**form_inputs(form))
        if not tc.data:
            info = served(config)
            nbytes = request_bytes(tc, plan_inputs(tc, info), info.max_batch_size > 0)
            check_request_bytes(nbytes, f"model {info.name}")
    except ValueError as exc:
        out.append(str(exc).removeprefix("class default: "))
    return out


def import_prometheus(url: str, query: str, start, end, step, folder: Path, client=None,
                      now: float | None = None) -> tuple[Path, RateTrace]:
    """Read a range query's history from Prometheus (start/end: unix s or ISO-8601; step: s or '1m') and save it
    as a rate CSV in folder, which a load names by path; return (the path, the trace). TraceError: what is wrong."""
    if client is None:
        import httpx  # noqa: PLC0415 - only an import asks Prometheus

        with httpx.Client() as own:
            trace = fetch_rate_trace(url, query, start, end, step, own)
    else:
        trace = fetch_rate_trace(url, query, start, end, step, client)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    path = folder / f"prometheus-{stamp}.csv"
    n = 1
    while path.exists():  # two imports in one second keep both
        n += 1
        path = folder / f"prometheus-{stamp}-{n}.csv"
    write_rate_csv(trace, path)
    return path, trace


def form_from_spec(spec: LoadSpec, fallback: TrafficForm) -> TrafficForm:
    """Return the form that describes a running spec (what the panel starts from while traffic runs)."""
    if spec.sequences:
        seq = spec.sequences[0]
        return TrafficForm(model=seq.model, sequences=seq.count, sequence_length=int(seq.length.n),
                           duration_s=spec.duration_s or fallback.duration_s,
                           timeout_ms=seq.timeout_ms or fallback.timeout_ms, sla_ms=seq.sla_ms)
    first = spec.classes[0]
    names = tuple(c.name for c in spec.classes)
    mix = MIXES[1] if names == ("interactive", "batch") else MIXES[0]
    arrival = spec.arrival.kind.value if spec.arrival.kind.value in ARRIVALS else fallback.arrival
    trace = _trace_fields(spec, fallback) if spec.mode is Mode.OPEN and is_rate_trace(spec.arrival) else {}
    return TrafficForm(
        model=spec.model, mode=spec.mode.value, concurrency=spec.concurrency, rate=spec.rate, arrival=arrival,
        duration_s=spec.duration_s or fallback.duration_s, mix=mix,
        interactive_share=first.share if mix == MIXES[1] else fallback.interactive_share,
        retry=first.retry.kind.value if first.retry.kind.value in RETRIES else "none",
        timeout_ms=first.timeout_ms or fallback.timeout_ms, sla_ms=first.sla_ms,
        shapes=tuple((i.name, ",".join(map(str, i.dims))) for i in first.inputs if i.dims is not None),
        send=tuple(i.name for i in first.inputs if i.send), data=first.data or "", **trace,
    )


def _trace_fields(spec: LoadSpec, fallback: TrafficForm) -> dict:
    """Return a running trace's form fields: the scale that plays its mean at the spec's rate."""
    a = spec.arrival
    try:
        scale = round(scale_for(trace_of(a), spec.rate), 6)
    except (TraceError, ValueError, ZeroDivisionError):
        scale = fallback.scale
    return {"trace": a.rate_trace or "", "compress": a.compress, "scale": scale, "trace_class": a.trace_class or "",
            "trace_process": a.process}


def build_spec(form: TrafficForm, config: ModelConfig | None = None) -> LoadSpec:
    """Return the LoadSpec for a form; ValueError names what is wrong (with the served config: its input data read
    and checked too)."""
    wrong = problems(form, config)
    if wrong:
        raise ValueError("; ".join(wrong))
    inputs = form_inputs(form)
    if config is not None and inputs["data"] and not form.sequences:
        entries = read_data(inputs["data"], served(config))
        check_request_bytes(max((arrays_bytes(e.arrays.values()) for e in entries), default=0),
                            f"input data {inputs['data']}")
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
                         retry=retry, **inputs),
            TrafficClass(name="batch", share=1 - share, priority=2, timeout_ms=form.timeout_ms, sla_ms=form.sla_ms * 10,
                         retry=retry, **inputs),
        )
    else:
        classes = (TrafficClass(name="default", timeout_ms=form.timeout_ms, sla_ms=form.sla_ms, retry=retry, **inputs),)
    if plays_trace(form):  # open loop at the played mean, for the played span
        a = trace_arrival(form)
        base = LoadSpec(mode=Mode.OPEN, concurrency=form.concurrency, model=form.model, classes=classes)
        return trace_load(base, a.rate_trace, a.compress, form.scale, a.process, a.trace_class)
    return LoadSpec(mode=Mode(form.mode), concurrency=form.concurrency, rate=form.rate,
                    arrival=ArrivalSpec(kind=form.arrival), duration_s=form.duration_s, model=form.model, classes=classes)


def load_targets(spec: LoadSpec | None) -> set[str]:
    """Return the models a load spec sends to."""
    return set(spec.targets()) if spec is not None else set()


Window = tuple[float, float]  # [t0, t1) in epoch seconds


def target_rate(spec: LoadSpec | None, window: Window | None = None, started_at: float | None = None) -> float | None:
    """Return the open-loop arrival rate a spec asks for (shared stream plus classes' own), None in closed loop.
    A rate trace asks what it played over window (epoch s) from the run's start (started_at), not its mean; without
    them, its played mean."""
    if spec is None:
        return None
    own = sum(_stream_rate(c.arrival, c.rate, window, started_at) for c in spec.classes if c.rate)
    if spec.mode is Mode.OPEN:
        return _stream_rate(spec.arrival, spec.rate, window, started_at) + own
    return own or None


def class_targets(spec: LoadSpec, window: Window | None = None,
                  started_at: float | None = None) -> dict[str, float | None]:
    """Return each class's target rate (open loop: its share of the shared stream, or its own rate); a rate trace's
    stream asks what it played over window from started_at (see target_rate)."""
    shared = [c for c in spec.classes if not c.rate]
    total_share = sum(c.share for c in shared) or 1.0
    stream = _stream_rate(spec.arrival, spec.rate, window, started_at) if spec.mode is Mode.OPEN else None
    out: dict[str, float | None] = {}
    for c in spec.classes:
        if c.rate:
            out[c.name] = _stream_rate(c.arrival, c.rate, window, started_at)
        elif stream is not None:
            out[c.name] = stream * c.share / total_share
        else:
            out[c.name] = None
    return out


def _stream_rate(arrival: ArrivalSpec | None, rate: float, window: Window | None, started_at: float | None) -> float:
    """Return what one stream asks: its rate, or a trace's played rate over the window (0 outside the playback)."""
    if not is_rate_trace(arrival) or window is None or started_at is None:
        return rate
    try:
        asked = asked_rate(arrival, rate, started_at, *window)
    except (TraceError, ValueError):  # the file went away: judge by the mean the run was started with
        return rate
    return asked or 0.0


def keep_up_warning(spec: LoadSpec | None, window: dict, min_seconds: float = 5.0,
                    started_at: float | None = None) -> str | None:
    """Return a warning when an open-loop run falls behind its schedule, from a window of client rows (their `span`
    and the run's started_at: a rate trace is judged on what it asked in that span)."""
    row = window.get(ALL) or {}
    seconds = row.get("seconds") or 0
    span = row.get("span")
    if not target_rate(spec, tuple(span) if span else None, started_at) or seconds < min_seconds:
        return None
    share = behind(row)
    return None if share is None else behind_text(share, f"over the last {seconds:.0f} s")
