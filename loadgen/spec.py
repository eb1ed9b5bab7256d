"""What a load run does: frozen descriptions of arrivals, classes, sequences, retries and bounds."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from loadgen.inputs.shapes import LengthSpec, ShapeSpec
from loadgen.spec_limits import check_spec

ALL = "all"  # the row of figures that sums every traffic class


class Mode(StrEnum):
    """Closed loop keeps N requests in flight; open loop follows an arrival schedule."""

    CLOSED = "closed"
    OPEN = "open"


class ArrivalKind(StrEnum):
    """The arrival processes of loadgen.arrivals."""

    CONSTANT = "constant"
    POISSON = "poisson"
    BURSTY = "bursty"
    MMPP = "mmpp"
    RAMP = "ramp"
    STEP = "step"
    TRACE = "trace"
    RATE_TRACE = "rate_trace"


class RetryKind(StrEnum):
    """When a failed request is sent again."""

    NONE = "none"
    IMMEDIATE = "immediate"
    BACKOFF = "backoff"


def _coerce(obj, name: str, kind) -> None:
    try:
        object.__setattr__(obj, name, kind(getattr(obj, name)))
    except ValueError:
        raise ValueError(f"{name} must be one of {', '.join(kind)}, got {getattr(obj, name)!r}") from None


@dataclass(frozen=True)
class ArrivalSpec:
    """How arrivals spread in time; the rate comes from the load or the class (mean rate for bursty/mmpp)."""

    kind: ArrivalKind = ArrivalKind.POISSON
    process: str = "poisson"  # arrivals inside ramp/step/bursty: poisson or constant
    on_s: float = 1.0  # bursty: on period
    off_s: float = 1.0  # bursty: off period
    ratio: float = 10.0  # mmpp: high rate / low rate
    high_s: float = 1.0  # mmpp: mean time in the high state
    low_s: float = 4.0  # mmpp: mean time in the low state
    ramp_s: float = 10.0  # ramp: time to reach the rate
    start_fraction: float = 0.1  # ramp: starting rate as a fraction of the rate
    steps: tuple[tuple[float, float], ...] = ((10.0, 1.0),)  # step: (duration_s, rate multiplier)
    trace: str | None = None  # trace: file of gaps or timestamps
    trace_format: str = "intervals_us"  # see loadgen.trace.FORMATS
    speed: float = 1.0  # trace: playback speed
    loop: bool = True  # trace: start again at the end
    rate_trace: str | None = None  # rate_trace: a shipped trace's name (diurnal, flash_crowd) or a rate file's path
    compress: float = 1.0  # rate_trace: recorded seconds per played second (144: a day in 10 minutes)
    trace_class: str | None = None  # rate_trace: play this class's recorded rates instead of the total

    def __post_init__(self):
        _coerce(self, "kind", ArrivalKind)
        if self.process not in ("poisson", "constant"):
            raise ValueError(f"process must be poisson or constant, got {self.process!r}")
        object.__setattr__(self, "steps", tuple(tuple(map(float, s)) for s in self.steps))
        if self.kind is ArrivalKind.TRACE and not self.trace:
            raise ValueError("a trace arrival needs trace: the path of a trace file")
        if self.kind is ArrivalKind.RATE_TRACE and not self.rate_trace:
            raise ValueError("a rate_trace arrival needs rate_trace: a shipped trace's name (diurnal, flash_crowd) "
                             "or the path of a rate file (CSV t,rate; JSON; perf_analyzer intervals)")


@dataclass(frozen=True)
class RetryPolicy:
    """Send a failed request again: never, at once, or after exponential backoff with full jitter."""

    kind: RetryKind = RetryKind.NONE
    max_attempts: int = 3  # attempts in all, the first included
    base_ms: float = 50.0
    multiplier: float = 2.0
    cap_ms: float = 2000.0
    jitter: bool = True
    on: tuple[str, ...] = ("timeout", "rejected", "error")  # outcomes worth another try

    def __post_init__(self):
        _coerce(self, "kind", RetryKind)
        object.__setattr__(self, "on", tuple(self.on))
        if self.max_attempts < 1:
            raise ValueError("max_attempts counts the first try too: it must be at least 1")


@dataclass(frozen=True)
class InputSpec:
    """One input of a class's model: its own dims (in place of the served -1s) and whether it is sent."""

    name: str
    dims: tuple[int, ...] | None = None  # without batch; None: the class's shape.dims, else the served dims
    send: bool | None = None  # None: required inputs are sent, optional ones are not

    def __post_init__(self):
        if self.dims is not None:
            object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))
            if any(d < -1 or d == 0 for d in self.dims):
                raise ValueError(f"input {self.name}: dims must be positive (or -1 for the class's variable length), "
                                 f"got {list(self.dims)}")


@dataclass(frozen=True)
class TrafficClass:
    """One kind of traffic: its model, share or own arrivals, priority, timeout, SLA and retries."""

    name: str = "default"
    model: str = ""  # empty: the load's model
    share: float = 1.0  # weight among classes without their own rate
    priority: int = 0  # Triton priority level; 1 is the highest, 0 the model's default
    timeout_ms: float | None = 5000.0  # client gives up after this
    server_timeout_us: int | None = None  # Triton queue timeout: the level needs allow_timeout_override
    # and (Triton 2.51) a non-zero default_timeout_microseconds
    sla_ms: float = 100.0  # a success within this counts as goodput
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    shape: ShapeSpec = field(default_factory=ShapeSpec)
    rate: float | None = None  # set: the class has its own open-loop stream
    arrival: ArrivalSpec | None = None  # its stream's process (default poisson)
    inputs: tuple[InputSpec, ...] = ()  # per-input dims and send; YAML {NAME: {dims: [16]}, OTHER: {send: true}}
    data: str | None = None  # real inputs: a perf_analyzer --input-data JSON file or a folder of .npy files
    string_len: tuple[int, int] = (1, 16)  # random BYTES elements: printable ASCII, lengths drawn in low..high

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))
        names = [i.name for i in self.inputs]
        if len(set(names)) != len(names):
            raise ValueError(f"class {self.name}: each input is named once in inputs, got {names}")
        low, high = (int(v) for v in self.string_len)
        object.__setattr__(self, "string_len", (low, high))
        if not 0 <= low <= high:
            raise ValueError(f"class {self.name}: string_len needs 0 <= low <= high, got {low}..{high}")
        if self.data and (self.inputs or self.shape.kind != "fixed" or self.shape.dims is not None):
            raise ValueError(f"class {self.name}: data ({self.data}) gives every tensor and its shape; drop inputs "
                             "and shape dims/lengths (shape.batch still sets the rows of data without a batch "
                             "dimension)")

    def input(self, name: str) -> InputSpec | None:
        """Return the class's settings for one input (None when it gives none)."""
        return next((i for i in self.inputs if i.name == name), None)


@dataclass(frozen=True)
class SequenceSpec:
    """N concurrent sequences on a stateful model, one after another in each slot."""

    name: str = "sequences"
    model: str = "stream_acc"
    count: int = 4
    length: LengthSpec = field(default_factory=LengthSpec)
    think_ms: float = 0.0  # pause between steps of a sequence
    priority: int = 0
    timeout_ms: float | None = 5000.0
    sla_ms: float = 100.0
    verify: bool = True  # check that each OUTPUT is the running sum (stream_acc)


@dataclass(frozen=True)
class LoadSpec:
    """A whole run: mode and load, bounds, traffic classes and sequences."""

    mode: Mode = Mode.CLOSED
    concurrency: int = 8
    rate: float = 100.0  # open loop: requests/s of the shared stream
    arrival: ArrivalSpec = field(default_factory=ArrivalSpec)
    duration_s: float | None = 10.0
    max_requests: int | None = None  # first attempts, sequence steps included
    model: str = "gpu_sim"
    classes: tuple[TrafficClass, ...] = (TrafficClass(),)
    sequences: tuple[SequenceSpec, ...] = ()
    warmup_s: float = 0.0  # the summary ignores requests sent earlier
    late_after_ms: float = 1.0  # open loop: a request sent later than this past its slot is late
    drain_s: float = 5.0  # after the bound, wait this long for requests in flight
    max_connections: int = 1024
    spin_us: float = 0.0  # open loop: wake this early and busy-wait the rest (sharper timing, more CPU)
    seed: int | None = None
    stop_when_all_fail_s: float | None = 10.0  # every attempt that ended failed this long: stop (None: never)

    def __post_init__(self):
        _coerce(self, "mode", Mode)
        object.__setattr__(self, "classes", tuple(self.classes))
        object.__setattr__(self, "sequences", tuple(self.sequences))
        validate(self)

    def class_model(self, tc: TrafficClass) -> str:
        """Return the model a class sends to."""
        return tc.model or self.model

    def targets(self) -> frozenset[str]:
        """Return every model the load sends to."""
        return frozenset({self.model, *(self.class_model(c) for c in self.classes), *(s.model for s in self.sequences)})


def validate(spec: LoadSpec) -> None:
    """Raise ValueError with an actionable message when the spec cannot run: its parts' rules, then every number
    finite and inside the one table of load bounds (loadgen.limits), named by its path."""
    names = [c.name for c in spec.classes] + [s.name for s in spec.sequences]
    if not names:
        raise ValueError("a load needs at least one traffic class or sequence group")
    if len(set(names)) != len(names):
        raise ValueError(f"class and sequence names must be unique, got {names}")
    if spec.concurrency < 0 or spec.rate < 0:
        raise ValueError("concurrency and rate cannot be negative")
    if any(c.share < 0 for c in spec.classes):
        raise ValueError("a class share cannot be negative")
    shared = [c for c in spec.classes if c.rate is None]
    if shared and sum(c.share for c in shared) <= 0:
        raise ValueError("the classes without their own rate need a positive total share")
    for bound in (spec.duration_s, spec.max_requests):
        if bound is not None and bound <= 0:
            raise ValueError("duration_s and max_requests must be positive when set")
    if spec.stop_when_all_fail_s is not None and spec.stop_when_all_fail_s <= 0:
        raise ValueError("stop_when_all_fail_s must be positive seconds, or null to keep a run whose requests all fail")
    check_spec(spec)
