"""Traffic presets of the pages: a small form turned into a loadgen LoadSpec."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf import json_format
from tritonclient.grpc.model_config_pb2 import ModelConfig

from loadgen.input_data import read_data
from loadgen.limits import LIMITS as LOAD_LIMITS, Limit, check_request_bytes
from loadgen.inputs import plan_inputs, sent_shape
from loadgen.metadata import ModelInfo, info_from_config
from loadgen.shapes import LengthSpec
from loadgen.spec import ArrivalSpec, InputSpec, LoadSpec, Mode, RetryKind, RetryPolicy, SequenceSpec, TrafficClass
from loadgen.spec_limits import arrays_bytes, request_bytes
from loadgen.behind import behind, behind_text
from loadgen.stats import ALL

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
    shapes: tuple[tuple[str, str], ...] = ()  # (input, dims as typed: "16", "3,224,224") for inputs served with a -1
    send: tuple[str, ...] = ()  # optional inputs to send (the others are left out)
    data: str = ""  # real inputs: a perf_analyzer JSON file or a folder of .npy files; empty: random values


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
    out += [wrong for name, limit in LIMITS.items() if (wrong := limit.problem(getattr(form, name))) is not None]
    if form.mode not in ("closed", "open"):
        out.append(f"load mode must be closed or open, not {form.mode!r}")
    if form.arrival not in ARRIVALS:
        out.append(f"arrivals must be one of {', '.join(ARRIVALS)}")
    return out


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
    return TrafficForm(
        model=spec.model, mode=spec.mode.value, concurrency=spec.concurrency, rate=spec.rate, arrival=arrival,
        duration_s=spec.duration_s or fallback.duration_s, mix=mix,
        interactive_share=first.share if mix == MIXES[1] else fallback.interactive_share,
        retry=first.retry.kind.value if first.retry.kind.value in RETRIES else "none",
        timeout_ms=first.timeout_ms or fallback.timeout_ms, sla_ms=first.sla_ms,
        shapes=tuple((i.name, ",".join(map(str, i.dims))) for i in first.inputs if i.dims is not None),
        send=tuple(i.name for i in first.inputs if i.send), data=first.data or "",
    )


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
    return LoadSpec(mode=Mode(form.mode), concurrency=form.concurrency, rate=form.rate,
                    arrival=ArrivalSpec(kind=form.arrival), duration_s=form.duration_s, model=form.model, classes=classes)


def load_targets(spec: LoadSpec | None) -> set[str]:
    """Return the models a load spec sends to."""
    return set(spec.targets()) if spec is not None else set()


def target_rate(spec: LoadSpec | None) -> float | None:
    """Return the open-loop arrival rate a spec asks for (shared stream plus classes' own), None in closed loop."""
    if spec is None:
        return None
    own = sum(c.rate for c in spec.classes if c.rate)
    if spec.mode is Mode.OPEN:
        return spec.rate + own
    return own or None


def class_targets(spec: LoadSpec) -> dict[str, float | None]:
    """Return each class's target rate (open loop: its share of the shared stream, or its own rate)."""
    shared = [c for c in spec.classes if not c.rate]
    total_share = sum(c.share for c in shared) or 1.0
    out: dict[str, float | None] = {}
    for c in spec.classes:
        if c.rate:
            out[c.name] = c.rate
        elif spec.mode is Mode.OPEN:
            out[c.name] = spec.rate * c.share / total_share
        else:
            out[c.name] = None
    return out


def keep_up_warning(spec: LoadSpec | None, window: dict, min_seconds: float = 5.0) -> str | None:
    """Return a warning when an open-loop run falls behind its schedule, from a window of client rows."""
    row = window.get(ALL) or {}
    seconds = row.get("seconds") or 0
    if not target_rate(spec) or seconds < min_seconds:
        return None
    share = behind(row)
    return None if share is None else behind_text(share, f"over the last {seconds:.0f} s")
