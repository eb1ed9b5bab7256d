"""What a sweep searches: configurations (named knobs over a base config) × load levels, under an SLA.

A configuration is a set of knob values (app.config.knobs) applied to the model's config at the start of the
sweep; the empty set is that config itself ("default", as Model Analyzer calls it). Configurations are told
apart by the config they serve, not by their knob values: two choices serving the same config are one
configuration, and the starting config is named by what it is ("2 instances, delay 500 µs (serving at
start)"). Loads are closed-loop concurrencies or open-loop rates. The SLA is a p99 budget (client side, ms),
with an optional floor on throughput.

A sweep decides with headroom (`p99_headroom`): a point whose p99 is inside the budget but within the headroom of it
is *on the edge* — measured again it is as likely over the budget as under — and a sweep names such a point only when
no point holds the budget with room (`SearchSpace.sla_state`, the one verdict every page, report and search reads).
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field

from app.config.errors import ConfigError
from app.config.model_config import ModelConfig
from app.config.read import settings_of
from app.config.edits import set_settings
from app.config.knobs import apply_knobs
from loadgen.limits import LIMITS, check, check_finite

CONCURRENCY, RATE = "concurrency", "rate"
INSIDE, EDGE, OVER = "inside", "on the edge", "over"
# How far under the budget a p99 must be for a sweep to count on it. A p99 measured again varies by this much:
# perf_analyzer (and Model Analyzer, which measures with it) counts p99s within 10 % of each other as one stable
# figure; and in bench/vs_model_analyzer's referee (2026-12-06/07, gpu_sim, 22 ms), the 7 points a tuner had measured
# 0-5 % under the budget were over it in 19 of 21 re-measurements, the 8 measured 27-42 % under it inside in all 24
# (docs/MEASUREMENTS.md). 0 restores the budget alone.
P99_HEADROOM = 0.10


def inside_sla(p99_ms: float | None, budget_ms: float, throughput_rps: float | None = None,
               min_throughput_rps: float | None = None) -> bool:
    """THE rule of "inside the SLA", for sweeps, scenarios, the twin's ranking and a trace's seconds alike: a p99
    measured and at most the budget (and, with a floor, the throughput measured and at least it). A figure not
    measured is never inside."""
    if p99_ms is None or p99_ms != p99_ms or p99_ms > budget_ms:
        return False
    return min_throughput_rps is None or (throughput_rps is not None and throughput_rps >= min_throughput_rps)


def sla_state(p99_ms: float | None, budget_ms: float, headroom: float, throughput_rps: float | None = None,
              min_throughput_rps: float | None = None) -> str:
    """THE verdict on a measured point, for sweeps, scenarios, the twin's ranking and every table: OVER the SLA (or
    not measured: inside_sla), on the EDGE (inside the budget, but within `headroom` of it, a fraction) or INSIDE
    with room."""
    if not inside_sla(p99_ms, budget_ms, throughput_rps, min_throughput_rps):
        return OVER
    return INSIDE if p99_ms <= budget_ms * (1 - headroom) else EDGE


@dataclass(frozen=True)
class Choice:
    """One configuration of a sweep: knob values over the base config (none: the base config itself)."""

    instances: int | None = None
    max_batch_size: int | None = None
    preferred: tuple[int, ...] | None = None
    delay_us: int | None = None
    start: bool = False  # the config serving when the sweep began, its knob values read from it

    def __post_init__(self) -> None:
        if self.preferred is not None:
            object.__setattr__(self, "preferred", tuple(int(p) for p in self.preferred))

    @property
    def knobs(self) -> dict:
        """Return the app.config.knobs names and values this choice sets."""
        out: dict = {}
        if self.instances is not None:
            out["instance_count"] = self.instances
        if self.max_batch_size is not None:
            out["max_batch_size"] = self.max_batch_size
        if self.preferred is not None:
            out["preferred_batch_size"] = self.preferred
        if self.delay_us is not None:
            out["max_queue_delay_microseconds"] = self.delay_us
        return out

    @property
    def key(self) -> str:
        """Return a stable short name, e.g. 'i2-d2000', 'i2-d500-start' or 'default'."""
        parts = []
        if self.instances is not None:
            parts.append(f"i{self.instances}")
        if self.max_batch_size is not None:
            parts.append(f"b{self.max_batch_size}")
        if self.preferred is not None:
            parts.append("p" + ("_".join(map(str, self.preferred)) or "none"))
        if self.delay_us is not None:
            parts.append(f"d{self.delay_us}")
        if self.start:
            parts.append("start")
        return "-".join(parts) or "default"

    @property
    def label(self) -> str:
        """Return a readable name, e.g. '2 instances, delay 2000 µs' or '2 instances (serving at start)'."""
        parts = []
        if self.instances is not None:
            parts.append(f"{self.instances} instance{'s' if self.instances != 1 else ''}")
        if self.max_batch_size is not None:
            parts.append(f"max batch {self.max_batch_size}")
        if self.preferred is not None:
            parts.append(f"preferred {list(self.preferred)}")
        if self.delay_us is not None:
            parts.append(f"delay {self.delay_us} µs")
        if self.start:
            return f"{', '.join(parts)} (serving at start)" if parts else "the config serving at start"
        return ", ".join(parts) or "default (the config at the start)"  # sweeps stored before configs had names

    @classmethod
    def from_key(cls, key: str) -> Choice:
        """Return the choice a key() names."""
        if key == "default":
            return cls()
        values: dict = {}
        for part in key.split("-"):
            tag, rest = part[:1], part[1:]
            if part == "start":
                values["start"] = True
            elif tag == "i":
                values["instances"] = int(rest)
            elif tag == "b":
                values["max_batch_size"] = int(rest)
            elif tag == "p":
                values["preferred"] = () if rest == "none" else tuple(int(x) for x in rest.split("_"))
            elif tag == "d":
                values["delay_us"] = int(rest)
            else:
                raise ValueError(f"not a configuration key: {key!r}")
        return cls(**values)

    def config(self, base: ModelConfig) -> ModelConfig:
        """Return base with this choice's knobs set (preferred sizes above max_batch_size are dropped)."""
        settings = apply_knobs(settings_of(base), self.knobs)
        dyn = settings.dynamic_batching
        if dyn is not None and settings.max_batch_size and any(p > settings.max_batch_size
                                                                  for p in dyn.preferred_batch_sizes):
            from dataclasses import replace

            kept = tuple(p for p in dyn.preferred_batch_sizes if p <= settings.max_batch_size)
            settings = replace(settings, dynamic_batching=replace(dyn, preferred_batch_sizes=kept))
        return set_settings(base, settings)


@dataclass(frozen=True)
class SearchSpace:
    """Configurations × loads to measure, and the SLA that picks the operating point."""

    model: str = "gpu_sim"
    instances: tuple[int, ...] = (1, 2)
    delays_us: tuple[int, ...] = (0, 2000)
    max_batch_sizes: tuple[int, ...] = ()
    preferred: tuple[tuple[int, ...], ...] = ()
    include_default: bool = True
    load_kind: str = CONCURRENCY
    loads: tuple[float, ...] = (1, 2, 4, 8, 16)
    p99_budget_ms: float = 50.0
    min_throughput_rps: float | None = None
    p99_headroom: float = P99_HEADROOM  # a fraction of the budget: a p99 inside it but this close is on the edge
    adaptive: bool = True
    extra: dict = field(default_factory=dict)  # traffic settings the loads run with (see sweep.traffic_spec)

    def __post_init__(self) -> None:
        for name in ("instances", "delays_us", "max_batch_sizes", "loads"):
            object.__setattr__(self, name, tuple(sorted(set(getattr(self, name)))))
        object.__setattr__(self, "preferred", tuple(tuple(int(x) for x in p) for p in self.preferred))
        validate_space(self)

    def choices(self) -> list[Choice]:
        """Return every configuration: the grid of the listed knobs, then the default when asked for."""
        axes = [
            [("instances", v) for v in self.instances] or [("instances", None)],
            [("max_batch_size", v) for v in self.max_batch_sizes] or [("max_batch_size", None)],
            [("preferred", v) for v in self.preferred] or [("preferred", None)],
            [("delays_us", v) for v in self.delays_us] or [("delays_us", None)],
        ]
        out: list[Choice] = []
        for combo in itertools.product(*axes):
            values = dict(combo)
            choice = Choice(values["instances"], values["max_batch_size"], values["preferred"], values["delays_us"])
            if choice.knobs and choice not in out:
                out.append(choice)
        if self.include_default or not out:
            out.append(Choice())
        return out

    def configurations(self, base: ModelConfig) -> list[Choice]:
        """Return the configurations to measure over base: one choice per config served (the first offered), the
        one serving base itself named by what it is and last (it is in the grid, or the default was asked for)."""
        out: list[Choice] = []
        seen: list[ModelConfig] = []
        at_start = False
        for choice in self.choices():
            try:
                config = choice.config(base)
            except (ConfigError, ValueError):  # applying it will fail with the reason, as a failed point
                out.append(choice)
                continue
            if config == base:
                at_start = True
            elif config not in seen:
                seen.append(config)
                out.append(choice)
        return [*out, self.start_choice(base)] if at_start else out

    def offers_start(self, base: ModelConfig) -> bool:
        """Return True when a choice that moves knobs serves base itself (the starting config offered by its values,
        not only as the default)."""
        for choice in self.choices():
            try:
                if choice.knobs and choice.config(base) == base:
                    return True
            except (ConfigError, ValueError):
                continue
        return False

    def start_choice(self, base: ModelConfig) -> Choice:
        """Return the starting config as a choice: its values of the knobs this space varies (instances and
        delay when it varies none), so that its name says what it is beside the others."""
        settings = settings_of(base)
        dyn = settings.dynamic_batching
        vary = {"instances": bool(self.instances), "max_batch_size": bool(self.max_batch_sizes),
                "preferred": bool(self.preferred), "delay_us": bool(self.delays_us)}
        if not any(vary.values()):
            vary["instances"] = vary["delay_us"] = True
        values = {"instances": settings.instance_groups[0].count if settings.instance_groups else None,
                  "max_batch_size": settings.max_batch_size,
                  "preferred": dyn.preferred_batch_sizes if dyn is not None else None,
                  "delay_us": dyn.max_queue_delay_microseconds if dyn is not None else None}
        return Choice(**{k: v for k, v in values.items() if vary[k]}, start=True)

    def points(self) -> int:
        """Return how many (configuration, load) points the full grid has."""
        return len(self.choices()) * len(self.loads)

    def to_dict(self) -> dict:
        """Return JSON-ready values (from_dict reads them back)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> SearchSpace:
        """Return the space to_dict() described (one stored before the headroom existed was decided without it, and
        is read back so)."""
        data = {"p99_headroom": 0.0, **data}
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items()})

    def meets_sla(self, p99_ms: float | None, throughput_rps: float | None) -> bool:
        """Return True when a point's p99 is within the budget (and its throughput above the floor, if set) — as
        measured, the headroom aside (sla_state says whether with room)."""
        return self.sla_state(p99_ms, throughput_rps) != OVER

    def sla_state(self, p99_ms: float | None, throughput_rps: float | None) -> str:
        """Return a point's verdict (sla_state) under this space's budget, headroom and floor (a throughput not
        measured is never inside)."""
        if throughput_rps is None:
            return OVER
        return sla_state(p99_ms, self.p99_budget_ms, self.p99_headroom, throughput_rps, self.min_throughput_rps)

    def holds(self, p99_ms: float | None, throughput_rps: float | None) -> bool:
        """Return True when a point holds the SLA with room (sla_state INSIDE): what a search brackets by."""
        return self.sla_state(p99_ms, throughput_rps) == INSIDE


def validate_space(space: SearchSpace) -> None:
    """Raise ValueError with an actionable message for a space that cannot run; its loads, SLA and size are held to
    the one table of load bounds (loadgen.limits), every number finite."""
    check_finite(space.to_dict())
    if space.load_kind not in (CONCURRENCY, RATE):
        raise ValueError(f"load_kind must be {CONCURRENCY!r} or {RATE!r}, got {space.load_kind!r}")
    if not space.loads or any(v <= 0 for v in space.loads):
        raise ValueError("give at least one load level, each above 0")
    check("sweep_loads", len(space.loads), "loads (how many)")
    level = LIMITS["concurrency"].within(low=1) if space.load_kind == CONCURRENCY else LIMITS["rate"]
    for v in space.loads:
        level.check(v, "load level")
    if any(v < 1 or v > 64 for v in space.instances):
        raise ValueError("instance counts run from 1 to 64")
    if any(v < 0 or v > 10_000_000 for v in space.delays_us):
        raise ValueError("max_queue_delay runs from 0 to 10,000,000 µs")
    if any(v < 0 for v in space.max_batch_sizes) or any(x < 1 for p in space.preferred for x in p):
        raise ValueError("batch sizes cannot be negative; preferred sizes start at 1")
    for v in (*space.max_batch_sizes, *(x for p in space.preferred for x in p)):
        check("batch_size", v, "batch size")
    for p in space.preferred:
        check("preferred_sizes", len(p), f"preferred set {list(p)} (how many)")
    if space.p99_budget_ms <= 0:
        raise ValueError("the p99 budget must be above 0 ms")
    check("sla_ms", space.p99_budget_ms, "p99_budget_ms")
    if not 0 <= space.p99_headroom <= 0.5:
        raise ValueError(f"the p99 headroom runs from 0 to 50 % of the budget, got {space.p99_headroom * 100:g} %")
    if space.min_throughput_rps is not None:
        check("throughput_floor", space.min_throughput_rps, "min_throughput_rps")
    check("sweep_points", len(space.choices()) * len(space.loads), "configurations × loads")
