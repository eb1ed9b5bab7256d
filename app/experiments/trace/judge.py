"""Judging a configuration on a played trace (pure): its score from one-second windows, and the one verdict rule.

The score of one playback (TraceScore) comes from the run's one-second MeasuredWindows, every latency sample kept
(percentiles always from merged samples, never averaged):
- goodput: answers right and within the SLA (counted from their slot) over the whole run / the played seconds;
- worst-minute p99: the p99 of every 60 consecutive one-second windows merged — a sliding minute in one-second steps
  over the played span and the drain after it — the highest; a run shorter than a minute: its whole span;
- seconds over the SLA: one-second windows whose p99 exceeds the SLA, the p99 taken over every request that ended
  in the second, a failure counting as slower than any answer; a second with fewer than FEW_ENDED such requests is
  judged by its slowest (a p99 of so few is its maximum anyway); a second in which nothing ended is over when
  requests were sent in it (they all waited the whole second: a stall), under when none were;
- instance-seconds: instances × played seconds (per window when the count changed during the run).

The verdict (judge): a configuration holds the SLA through the trace when its seconds over are at most
`tolerance` × its played seconds. Of those that hold, the lowest instance count wins (cost), ties to the higher
goodput (then fewer seconds over, then the lower worst-minute p99); when none holds, the best goodput wins (ties: fewer
seconds over).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np

from app.timeline.meter import MeasuredWindow
from app.experiments.sweep.space import inside_sla
from loadgen.outcome import FAILED, Outcome

MINUTE_S = 60  # one-second windows in the sliding minute
FEW_ENDED = 10  # fewer requests ended in a second than this: its slowest decides
TOLERANCE = 0.01  # share of the played seconds a configuration may spend over the SLA and still hold it
_FAILED_S = 1e9  # a failure's place among latencies: slower than any answer


@dataclass(frozen=True)
class TraceScore:
    """One configuration's figures over one playback of a trace."""

    sla_ms: float
    played_s: float  # the trace's played span (goodput's denominator)
    measured_s: float  # the windows' seconds: the played span and the drain after it
    sent: int  # requests sent (first attempts)
    answered: int
    failed: int
    good: int  # answered right within the SLA, counted from the slot
    goodput_rps: float
    p99_ms: float | None  # over the whole run
    worst_minute_p99_ms: float | None
    worst_minute_at_s: float | None  # where that minute starts, seconds from the first window's start
    seconds_over: int
    seconds: int  # one-second windows judged
    few_seconds: int  # of those, judged by their slowest request (fewer than FEW_ENDED ended)
    instances: int  # the most instances served during the run
    instance_seconds: float
    behind: float | None = None  # share of requests the generator sent late when it fell behind (loadgen.behind)
    over_at_s: tuple[float, ...] = ()  # where each second over the SLA starts, seconds from the first window's start

    def __post_init__(self) -> None:
        object.__setattr__(self, "over_at_s", tuple(float(t) for t in self.over_at_s))

    def allowed_over(self, tolerance: float = TOLERANCE) -> int:
        """Return how many seconds over the SLA a configuration may have and still hold it."""
        return allowed_over(self.played_s, tolerance)

    def holds(self, tolerance: float = TOLERANCE) -> bool:
        """Return True when the run held the SLA through the trace (seconds over within the tolerance)."""
        return self.seconds_over <= self.allowed_over(tolerance)

    def to_dict(self) -> dict:
        """Return JSON-ready values (from_dict reads them back)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TraceScore:
        """Return the score to_dict() described; ValueError naming a missing field."""
        names = {f.name for f in fields(cls)}
        missing = [n for n in names if n not in data and n not in ("behind", "over_at_s")]
        if missing:
            raise ValueError(f"a trace score needs {', '.join(sorted(missing))}")
        return cls(**{k: v for k, v in data.items() if k in names})


def allowed_over(played_s: float, tolerance: float = TOLERANCE) -> int:
    """Return the seconds over the SLA a playback of played_s may have and still hold it (tolerance: a share)."""
    if not 0 <= tolerance <= 1:
        raise ValueError(f"tolerance is a share of the played seconds, 0 to 1, not {tolerance!r}")
    return math.floor(tolerance * played_s + 1e-9)


def score(windows: Sequence[MeasuredWindow], played_s: float, sla_ms: float, instances: int | Sequence[int],
          behind: float | None = None) -> TraceScore:
    """Return the score of one playback from its consecutive one-second windows (the played span and its drain).

    instances: the count served throughout, or one count per window (a run whose count changed)."""
    if not windows:
        raise ValueError("no windows: a trace's score needs its measured seconds")
    if played_s <= 0 or sla_ms <= 0:
        raise ValueError(f"played_s and sla_ms must be above 0, got {played_s!r} and {sla_ms!r}")
    counts = [int(instances)] * len(windows) if isinstance(instances, int) else [int(n) for n in instances]
    if len(counts) != len(windows):
        raise ValueError(f"{len(counts)} instance counts for {len(windows)} windows: give one per window")
    samples = [_latencies(w) for w in windows]
    totals = [_counts(w) for w in windows]
    few, over_at = 0, []
    for w, lat, (sent, _, failed, _) in zip(windows, samples, totals):
        ended = np.concatenate([lat, np.full(failed, _FAILED_S)])
        if not len(ended):
            over = sent > 0
        elif len(ended) < FEW_ENDED:
            few += 1
            over = not inside_sla(float(ended.max()) * 1e3, sla_ms)
        else:
            over = not inside_sla(float(np.percentile(ended, 99)) * 1e3, sla_ms)
        if over:
            over_at.append(w.t0 - windows[0].t0)
    worst, at = _worst_minute(samples, windows)
    whole = np.concatenate(samples)
    sent, answered, failed, good = (sum(t[i] for t in totals) for i in range(4))
    t_first = windows[0].t0
    t_end_played = t_first + played_s
    instance_s = sum(n * max(0.0, min(w.t1, t_end_played) - w.t0) for n, w in zip(counts, windows))
    return TraceScore(
        sla_ms=float(sla_ms), played_s=float(played_s), measured_s=float(sum(w.seconds for w in windows)), sent=sent,
        answered=answered, failed=failed, good=good, goodput_rps=good / played_s,
        p99_ms=_ms(np.percentile(whole, 99)) if len(whole) else None, worst_minute_p99_ms=worst,
        worst_minute_at_s=None if at is None else windows[at].t0 - t_first, seconds_over=len(over_at),
        seconds=len(windows), few_seconds=few, instances=max(counts), instance_seconds=float(instance_s), behind=behind,
        over_at_s=tuple(over_at))


def _latencies(window: MeasuredWindow) -> np.ndarray:
    """Return every answered request's latency (s) in a window, all classes, reload-held ones too."""
    parts = [np.frombuffer(s.values, dtype=np.float64) for b in window.buckets.values()
             for s in (b.latencies, b.held_latencies) if len(s)]
    return np.concatenate(parts) if parts else np.empty(0)


def _counts(window: MeasuredWindow) -> tuple[int, int, int, int]:
    """Return (sent, answered, failed, good) of a window over all classes."""
    sent = answered = failed = good = 0
    for b in window.buckets.values():
        sent += b.requests
        answered += b.outcomes[Outcome.OK]
        failed += sum(b.outcomes[k] for k in FAILED)
        good += b.good
    return sent, answered, failed, good


def _worst_minute(samples: list[np.ndarray], windows: Sequence[MeasuredWindow]) -> tuple[float | None, int | None]:
    """Return the highest p99 (ms) of MINUTE_S consecutive windows merged, sliding one window at a time, and the
    index of its first window; the whole run when it is shorter than a minute."""
    span = min(MINUTE_S, len(windows))
    flat = np.concatenate(samples)
    edges = np.concatenate([[0], np.cumsum([len(s) for s in samples])])  # window i's samples: flat[edges[i]:edges[i+1]]
    worst, at = None, None
    for i in range(len(windows) - span + 1):
        chunk = flat[edges[i]:edges[i + span]]
        if not len(chunk):
            continue
        p99 = _ms(np.percentile(chunk, 99))
        if worst is None or p99 > worst:
            worst, at = p99, i
    return worst, at


def _ms(seconds) -> float:
    return float(seconds) * 1000.0


@dataclass(frozen=True)
class TraceVerdict:
    """Which configuration the trace picks, why in plain words, and which held the SLA."""

    pick: str | None  # the name of the configuration recommended (None: nothing was scored)
    holds: tuple[str, ...]  # the names of those that held the SLA, in the order given
    reason: str
    tolerance: float = TOLERANCE

    def to_dict(self) -> dict:
        return {"pick": self.pick, "holds": list(self.holds), "reason": self.reason, "tolerance": self.tolerance}


def judge(scores: Mapping[str, TraceScore], tolerance: float = TOLERANCE) -> TraceVerdict:
    """Return the verdict over configurations' scores (by name): the lowest instance count that holds the SLA through
    the trace (ties: higher goodput, fewer seconds over, lower worst-minute p99); none holds: the best goodput (ties:
    fewer seconds over)."""
    if not scores:
        return TraceVerdict(None, (), "no configuration was played through the trace", tolerance)
    holds = tuple(name for name, s in scores.items() if s.holds(tolerance))
    if holds:
        pick = min(holds, key=lambda n: (scores[n].instances, -scores[n].goodput_rps, scores[n].seconds_over,
                                         _or_inf(scores[n].worst_minute_p99_ms)))
        return TraceVerdict(pick, holds, _held_words(pick, holds, scores, tolerance), tolerance)
    pick = max(scores, key=lambda n: (scores[n].goodput_rps, -scores[n].seconds_over))
    return TraceVerdict(pick, (), _none_words(pick, scores, tolerance), tolerance)


def _or_inf(value: float | None) -> float:
    return math.inf if value is None else value


def over_words(s: TraceScore) -> str:
    """Return a score's seconds over the SLA as said, e.g. '3 of 12 s over the SLA'."""
    return f"{s.seconds_over} of {s.seconds} s over the SLA"


def score_words(s: TraceScore) -> str:
    """Return a score's headline figures in one phrase."""
    worst = "—" if s.worst_minute_p99_ms is None else f"{s.worst_minute_p99_ms:,.1f} ms"
    return (f"goodput {s.goodput_rps:,.1f} req/s, worst-minute p99 {worst}, {over_words(s)}, "
            f"{s.instance_seconds:,.0f} instance-seconds")


def _held_words(pick: str, holds: tuple[str, ...], scores: Mapping[str, TraceScore], tolerance: float) -> str:
    s = scores[pick]
    allowed = s.allowed_over(tolerance)
    words = (f"{pick}: it holds the SLA ({s.sla_ms:g} ms p99) through the trace — {over_words(s)}, at most "
             f"{allowed} allowed ({tolerance:.0%} of {s.played_s:,.0f} played seconds) — at the lowest instance count "
             f"that does ({s.instances}); {score_words(s)}.")
    ties = [n for n in holds if n != pick and scores[n].instances == s.instances]
    if ties:
        words += f" Also holding at {s.instances} instance{'s' * (s.instances != 1)}: {', '.join(ties)} (less goodput)."
    failing = [n for n in scores if n not in holds]
    if failing:
        words += " Did not hold: " + "; ".join(f"{n} ({over_words(scores[n])})" for n in failing) + "."
    return words


def _none_words(pick: str, scores: Mapping[str, TraceScore], tolerance: float) -> str:
    s = scores[pick]
    return (f"{pick}: no configuration held the SLA ({s.sla_ms:g} ms p99) through the trace (at most "
            f"{s.allowed_over(tolerance)} s over allowed, {tolerance:.0%} of {s.played_s:,.0f} played seconds); this "
            f"one has the best goodput — {score_words(s)}. Try more instances, another delay, or a lower scale.")


def pooled(scores: Sequence[TraceScore]) -> TraceScore:
    """Return one configuration's scores of several playbacks as one: counts and seconds summed, goodput over every
    played second, the worst minute and the p99 the highest of any playback (their samples are not pooled)."""
    if not scores:
        raise ValueError("nothing to pool")
    played = sum(s.played_s for s in scores)
    worst = max(scores, key=lambda s: -1.0 if s.worst_minute_p99_ms is None else s.worst_minute_p99_ms)
    behind = [s.behind for s in scores if s.behind is not None]
    return TraceScore(
        sla_ms=min(s.sla_ms for s in scores), played_s=played, measured_s=sum(s.measured_s for s in scores),
        sent=sum(s.sent for s in scores), answered=sum(s.answered for s in scores),
        failed=sum(s.failed for s in scores), good=sum(s.good for s in scores),
        goodput_rps=sum(s.good for s in scores) / played,
        p99_ms=max((s.p99_ms for s in scores if s.p99_ms is not None), default=None),
        worst_minute_p99_ms=worst.worst_minute_p99_ms, worst_minute_at_s=worst.worst_minute_at_s,
        seconds_over=sum(s.seconds_over for s in scores), seconds=sum(s.seconds for s in scores),
        few_seconds=sum(s.few_seconds for s in scores), instances=max(s.instances for s in scores),
        instance_seconds=sum(s.instance_seconds for s in scores), behind=max(behind) if behind else None)
