"""Request-rate traces: a recorded history of req/s, played back as arrival offsets, time-compressed (a day in 10
minutes: compress 144, rates kept) and rate-scaled. Pure: randomness from a seed, no clock, no network.

Reading: loadgen.rate_trace.files (CSV, JSON, arrival times, perf_analyzer intervals) and
loadgen.rate_trace.prometheus_range (a PromQL range query); shipped traces: loadgen.rate_trace.shipped."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from random import Random

from loadgen.limits import LIMITS

MAX_HISTORY_S = 7 * 86_400  # a week: the longest history that is one traffic pattern to tune against
MAX_STEPS = MAX_HISTORY_S + 1  # one step a second over the week bounds memory whatever the step
MODES = ("poisson", "uniform")


class TraceError(ValueError):
    """A trace that cannot be read or played: where the problem is, and the fix."""


@dataclass(frozen=True)
class RateTrace:
    """A request-rate history: rates[i] req/s held over [i*step_s, (i+1)*step_s) of recorded time."""

    rates: tuple[float, ...]  # the total over classes when there are classes
    step_s: float  # the recorded spacing: 60 for a Prometheus 1m step
    classes: dict[str, tuple[float, ...]] = field(default_factory=dict, hash=False)  # per-class rates, same steps
    source: str = ""  # where it came from, for display

    def __post_init__(self):
        object.__setattr__(self, "rates", tuple(float(r) for r in self.rates))
        object.__setattr__(self, "classes", {str(k): tuple(float(r) for r in v) for k, v in self.classes.items()})
        where = self.source or "the trace"
        if not (isinstance(self.step_s, (int, float)) and math.isfinite(self.step_s) and self.step_s > 0):
            raise TraceError(f"{where}: step_s = {self.step_s!r}: the recorded spacing must be positive seconds")
        object.__setattr__(self, "step_s", float(self.step_s))
        if not self.rates:
            raise TraceError(f"{where}: no rates: a trace needs at least one step")
        check_span(len(self.rates), self.step_s, where)
        for i, rate in enumerate(self.rates):
            rate_value(rate, f"{where}: rates[{i}]")
        check_class_count(len(self.classes), where)
        for name, rates in self.classes.items():
            if len(rates) != len(self.rates):
                raise TraceError(f"{where}: class {name!r} has {len(rates)} steps, the trace {len(self.rates)}: "
                                 "give every class a rate at every step")

    @property
    def duration_s(self) -> float:
        """Return the recorded time the trace covers."""
        return len(self.rates) * self.step_s

    @property
    def mean(self) -> float:
        """Return the mean rate over the trace (req/s)."""
        return sum(self.rates) / len(self.rates)

    @property
    def peak(self) -> float:
        """Return the highest rate of any step (req/s)."""
        return max(self.rates)


def playback(trace: RateTrace, compress: float = 1.0, scale: float = 1.0, seed: int = 0,
             mode: str = "poisson") -> list[float]:
    """Return sorted arrival offsets (s) of the trace played compress times faster at scale times its rates:
    inside each played step, a Poisson process of that step's rate, or evenly spaced arrivals."""
    check_playback(trace, compress, scale, mode)
    step = trace.step_s / compress
    out: list[float] = []
    if mode == "poisson":
        rng = Random(seed)
        for i, recorded in enumerate(trace.rates):
            rate, end = recorded * scale, (i + 1) * step
            if rate <= 0:
                continue
            t = i * step + rng.expovariate(rate)  # memoryless: a fresh gap at each step's start is exact
            while t < end:
                out.append(t)
                t += rng.expovariate(rate)
        return out
    before = 0.0  # expected arrivals before this step; arrival j falls where that count reaches j + 0.5
    for i, recorded in enumerate(trace.rates):
        rate = recorded * scale
        after = before + rate * step
        j = math.ceil(before - 0.5)
        while j + 0.5 < after:
            out.append(i * step + (j + 0.5 - before) / rate)
            j += 1
        before = after
    return out


def check_playback(trace: RateTrace, compress: float, scale: float, mode: str = "poisson") -> None:
    """Raise TraceError when compress, scale or mode take the playback outside the limits table (loadgen.limits)."""
    if mode not in MODES:
        raise TraceError(f"mode {mode!r}: arrivals inside a step are {' or '.join(MODES)}")
    speed = LIMITS["trace_speed"].within(what="compress (recorded seconds per played second)")
    factor = dataclasses.replace(LIMITS["arrival_factor"], what="scale (rate multiplier)", above=True)
    for limit, value, name in ((speed, compress, "compress"), (factor, scale, "scale")):
        if not limit.fits(value):
            raise TraceError(limit.problem(value, name))
    played, longest = trace.duration_s / compress, LIMITS["duration_s"].high
    if played > longest:
        raise TraceError(f"{describe(trace)} at compress {compress:g} plays {span_text(played)}; a run lasts at most "
                         f"{span_text(longest)}: use compress {math.ceil(trace.duration_s / longest)} or more")
    for name, rate in (("rate", trace.mean), ("peak_rate", trace.peak)):
        limit = LIMITS[name]
        if rate * scale > limit.high:
            raise TraceError(f"scale {scale:g} plays a {limit.what} of {rate * scale:,.0f}; at most "
                             f"{limit.high:,.0f} ({limit.why}): use scale {limit.high / rate:.3g} or less")
    total, most = trace.mean * scale * played, LIMITS["max_requests"].high
    if total > most:
        raise TraceError(f"compress {compress:g} and scale {scale:g} send about {total:,.0f} requests; a run sends at "
                         f"most {most:,.0f}: raise compress to {compress * total / most:.3g} or lower scale to "
                         f"{scale * most / total:.3g}")


def rate_at(trace: RateTrace, t_playback: float, compress: float = 1.0, scale: float = 1.0) -> float:
    """Return the played rate (req/s) at t_playback seconds into the playback; 0 outside the trace."""
    i = math.floor(t_playback * compress / trace.step_s)
    return trace.rates[i] * scale if 0 <= i < len(trace.rates) else 0.0


def curve(trace: RateTrace, compress: float = 1.0, scale: float = 1.0) -> list[tuple[float, float]]:
    """Return the played rate as (t, req/s) at each step's start and at the end: a step line for a chart."""
    step = trace.step_s / compress
    points = [(i * step, r * scale) for i, r in enumerate(trace.rates)]
    return points + [(len(trace.rates) * step, trace.rates[-1] * scale)]


def describe(trace: RateTrace) -> str:
    """Return the trace in one line: '24 h at 1 min steps, 40–900 req/s, mean 310 req/s'."""
    text = (f"{span_text(trace.duration_s)} at {span_text(trace.step_s)} steps, {_num(min(trace.rates))}–"
            f"{_num(trace.peak)} req/s, mean {_num(trace.mean)} req/s")
    return text + (f", {len(trace.classes)} classes ({', '.join(trace.classes)})" if trace.classes else "")


def rate_value(value, where: str) -> float:
    """Return a recorded rate as a float, or raise TraceError naming where it is and the fix."""
    try:
        rate = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        rate = None
    if rate is None:
        raise TraceError(f"{where}: rate {value!r} is not a number: write requests per second, e.g. 120.5")
    if not math.isfinite(rate):
        raise TraceError(f"{where}: rate {value!r} is not a finite number: drop the row, or write 0 for no traffic")
    if rate < 0:
        raise TraceError(f"{where}: rate {rate:g} is negative: a request rate is 0 or more (a counter's difference "
                         "across a reset? use rate() in PromQL)")
    # The table's peak rate, not its mean rate: a recorded history may be scaled down on playback (check_playback).
    bound = LIMITS["peak_rate"]
    if rate > bound.high:
        raise TraceError(f"{where}: rate {rate:g} req/s is above {bound.high:,.0f}, the highest {bound.what} the lab "
                         "plays: divide the rates (per server, in PromQL) and scale them on playback")
    return rate


def check_span(steps: int, step_s: float, where: str) -> None:
    """Raise TraceError when steps of step_s cover more than a week, or are more than MAX_STEPS."""
    if (steps - 1) * step_s > MAX_HISTORY_S:
        raise TraceError(f"{where}: {span_text((steps - 1) * step_s)} of history; a trace holds at most 7 days: "
                         "read a shorter range")
    if steps > MAX_STEPS:
        raise TraceError(f"{where}: {steps:,} steps of {step_s:g} s; a trace holds at most {MAX_STEPS:,}: use a "
                         "coarser step")


def check_class_count(count: int, where: str) -> None:
    """Raise TraceError when a trace has more classes than a load may (the table's 'classes')."""
    limit = LIMITS["classes"]
    if count > limit.high:
        raise TraceError(f"{where}: {count} classes; a load has at most {limit.high:.0f} {limit.what}: sum some "
                         "together")


def span_text(seconds: float) -> str:
    """Return a time span in words: '24 h', '1 min', '10 s', '7 d'."""
    for unit, size, least in (("d", 86_400, 3), ("h", 3600, 2), ("min", 60, 2)):
        if seconds >= least * size or (unit != "d" and seconds >= size and seconds % size == 0):
            return f"{_num(seconds / size)} {unit}"
    return f"{_num(seconds)} s"


def _num(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 10 or x == int(x) else f"{x:.2g}"
