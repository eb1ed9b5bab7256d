"""Playing a request-rate trace once on the live server and measuring it second by second — what a trace-judged sweep
and an A/B trial on a trace share.

The first edge is read before the traffic starts, so every request of the playback is counted; windows are one
second long, aligned to the playback's start, through the played span and on while the requests in flight drain
(the load ends by itself after its played span and drain_s); the last window ends after the run has ended, so every
answer is in. A backlog an earlier configuration left is waited out first (StudyDriver.wait_idle).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from app.config.model_config import ModelConfig
from app.config.read import settings_of
from app.timeline.meter import MeasuredWindow, Meter, merged
from app.experiments.trace.judge import TraceScore, score
from loadgen.rate_trace.trace_load import PROCESS_MODES, played_s, trace_load
from loadgen.spec import LoadSpec, Mode, TrafficClass

DRAIN_S = 5.0  # after the played span, requests in flight get this long to answer (then they are cancelled)
TAIL_S = 3.0  # beyond the drain: the longest the measuring waits for the run to end


@dataclass(frozen=True)
class TraceLoad:
    """Which trace a study plays and how: a shipped trace's name or a rate file's path, compressed and scaled."""

    trace: str
    compress: float = 1.0
    scale: float = 1.0
    process: str = "poisson"  # arrivals inside a step: poisson, or constant (evenly spaced)
    trace_class: str | None = None  # play one class's recorded rates instead of the total

    def __post_init__(self) -> None:
        if not isinstance(self.trace, str) or not self.trace.strip():
            raise ValueError("trace: give a shipped trace's name (diurnal, flash_crowd) or the path of a rate file")
        if self.process not in PROCESS_MODES:
            raise ValueError(f"process {self.process!r}: arrivals inside a step are {' or '.join(PROCESS_MODES)}")
        for name in ("compress", "scale"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a number above 0, got {value!r}")

    def spec(self, model: str, sla_ms: float, seed: int) -> LoadSpec:
        """Return the open loop that plays the trace once, one class whose SLA goodput counts against; TraceError
        (a ValueError) when the trace cannot be read or played within the load bounds."""
        cls = TrafficClass(sla_ms=sla_ms, timeout_ms=max(5000.0, 20 * sla_ms))
        base = LoadSpec(mode=Mode.OPEN, rate=1.0, model=model, classes=(cls,), seed=seed, drain_s=DRAIN_S)
        return trace_load(base, self.trace, self.compress, self.scale, self.process, self.trace_class)

    def describe(self) -> str:
        """Return the load in words, e.g. 'flash_crowd at compress 360, scale 2'."""
        name = self.trace if len(self.trace) <= 60 else "…" + self.trace[-59:]
        cls = f" [{self.trace_class}]" if self.trace_class else ""
        return f"{name}{cls} at compress {self.compress:g}, scale {self.scale:g}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TraceLoad:
        return cls(**data)


def served_instances(config: ModelConfig) -> int:
    """Return the instances a config serves (every instance group's count; at least 1)."""
    groups = settings_of(config).instance_groups
    return max(1, sum(g.count for g in groups)) if groups else 1


def play(driver, meter: Meter, spec: LoadSpec, what: str) -> list[MeasuredWindow]:
    """Play spec's trace once from a quiet server; return its one-second windows (played span, then the drain).

    driver: the study's StudyDriver (start_traffic, next_window, wait_idle, the lab)."""
    played = played_s(spec.arrival)
    driver.wait_idle(meter)
    edge = meter.edge()
    meter.discard_before(edge.t)
    t0 = driver.start_traffic(spec)
    end_played, give_up = t0 + played, t0 + played + spec.drain_s + TAIL_S
    windows, k = [], 1
    while True:
        until = t0 + k
        running = driver.lab.traffic().running
        if until > end_played + 1e-6 and (not running or until > give_up):
            if running:  # in flight past the drain and the tail: stop it (its requests end cancelled)
                driver.lab.stop_traffic(f"traffic stop: {what}: requests still in flight past the drain")
            window, edge = driver.next_window(meter, edge, edge.t, lab_traffic=False)  # every answer is in now
            if windows and window.seconds < 0.5:  # a sliver: part of the second before it
                window = merged([windows.pop(), window])
            windows.append(window)
            break
        window, edge = driver.next_window(meter, edge, until, lab_traffic=until < end_played - 0.5)
        windows.append(window)
        k += 1
    driver.lab.stop_traffic(f"traffic stop: {what} played")
    return windows


def score_of(windows: list[MeasuredWindow], spec: LoadSpec, sla_ms: float, instances: int) -> TraceScore:
    """Return a playback's score (with whether the generator fell behind its schedule)."""
    return score(windows, played_s(spec.arrival), sla_ms, instances, merged(windows).figures().behind())
