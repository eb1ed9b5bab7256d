"""The twin's answer to the autopilot's one question: will N instances hold the SLA at the rate expected?

The autopilot (app.autopilot.pilot) asks a TwinSizer, when it has one, before it adds instances under pressure
(the fewest the twin expects to hold the SLA, instead of sizing capacity as linear in instances) and before it
gives one back (held when the twin expects one fewer to break the SLA). The twin's pessimistic edge is the
answer: a prediction's interval high must hold, so an uncertain twin sizes generously. Without a calibration, or
for a load it does not model, it says nothing and the reactive rules decide alone.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from app.lab.ports import StudyLab
from app.config.knobs import apply_knobs
from app.config.settings import ModelSettings
from app.twin.load import Arrivals, Load
from app.twin.predict import Prediction

Predictor = Callable[[ModelSettings, float], Prediction]  # (settings, rate req/s) -> the twin's prediction
# Advice given before and not acted on (advisory mode) stands while its count's pessimistic p99 stays within this
# share of the line (over it, or under it for fewer): near the line the twin's answer moves from one window to the
# next with the rate measured and the windows it learnt, and the advice flipped between +1 and +3 instances.
ADVICE_BAND = 0.1


@dataclass(frozen=True)
class SizingAnswer:
    """The twin's answer for one count: whether it holds, and the figures it rests on."""

    instances: int
    holds: bool
    p99_high_ms: float
    words: str
    host_cpu: float | None = None  # where the host, not the server, is the limit: how busy the twin expects its CPUs


class TwinSizer:
    """Ask the twin (predict(settings, rate)) which instance counts hold p99 under `share` × the SLA."""

    def __init__(self, predictor: Predictor, share: float = 0.8,
                 load_words: Callable[[float], str] | None = None) -> None:
        self.predictor, self.share = predictor, share
        self.load_words = load_words or (lambda rate_rps: f"at {rate_rps:,.0f}/s")  # the load the answer is for

    def verdict(self, settings: ModelSettings, instances: int, rate_rps: float, sla_ms: float) -> SizingAnswer | None:
        """Return whether `instances` hold the SLA at rate_rps by the twin's pessimistic edge (None: it cannot say)."""
        if not rate_rps or rate_rps <= 0:
            return None
        try:
            p = self.predictor(apply_knobs(settings, {"instance_count": instances}), rate_rps)
        except ValueError:  # no calibration yet, a load or a scheduler the twin does not model
            return None
        high = p.p99_ms.high
        if high != high:  # no sample: nothing known
            return None
        holds = high <= self.share * sla_ms
        busy = f", the host's CPUs about {p.host_cpu:.0%} busy" if p.host_cpu is not None else ""
        return SizingAnswer(instances, holds, high, f"the twin expects p99 up to {high:.1f} ms with {instances} "
                       f"instance{'s' if instances != 1 else ''} {self.load_words(rate_rps)} ({p.confidence.split(':')[0]} "
                       f"confidence{busy})", p.host_cpu)

    def fewest(self, settings: ModelSettings, rate_rps: float, sla_ms: float, low: int, high: int,
               advised: int | None = None) -> SizingAnswer | None:
        """Return the fewest instances in [low, high] that hold (or the verdict at high when none does; None: the
        twin cannot say). `advised`, a count advised before and not acted on, stands while it holds within
        ADVICE_BAND of the line and the fewest that hold are not clearly fewer (ADVICE_BAND under it)."""
        answers: dict[int, SizingAnswer | None] = {}
        found = None
        for n in range(low, high + 1):
            found = answers[n] = self.verdict(settings, n, rate_rps, sla_ms)
            if found is None or found.holds:
                break
        if found is None or advised is None or advised == found.instances or not low <= advised <= high:
            return found
        kept = answers[advised] if advised in answers else self.verdict(settings, advised, rate_rps, sla_ms)
        if kept is None:
            return found
        line = self.share * sla_ms
        if advised < found.instances and kept.p99_high_ms <= line * (1 + ADVICE_BAND):
            why = f"{kept.p99_high_ms / line - 1:.0%} over the line of {line:.1f} ms, within the advice's band"
        elif advised > found.instances and found.p99_high_ms > line * (1 - ADVICE_BAND):
            why = (f"{found.instances} would hold at {found.p99_high_ms:.1f} ms, within {ADVICE_BAND:.0%} of the "
                   f"line of {line:.1f} ms")
        else:
            return found
        return replace(kept, holds=True, words=f"{kept.words}; the advice stands ({why})")


def lab_predictor(lab: StudyLab, model: str) -> Predictor:
    """Return the predictor of a lab's twin for the lab's own traffic to model, at another rate."""
    def predict(settings: ModelSettings, rate_rps: float) -> Prediction:
        load = lab.twin_load(model, rate=rate_rps) or Load.poisson(rate_rps, 20.0, warmup_s=3.0)
        return lab.predict(model, settings, load)
    return predict


def lab_load_words(lab: StudyLab, model: str) -> Callable[[float], str]:
    """Return how an answer names the load it is for: the rate, or for the lab's closed loop its clients in flight
    (the twin predicts that loop, whose rate follows the instances: "at 508/s" beside the what-if's figures for the
    same loop read as another question, 2026-12-07)."""
    def words(rate_rps: float) -> str:
        try:
            load = lab.twin_load(model, rate=rate_rps)
        except ValueError:
            load = None
        if load is not None and load.kind == Arrivals.CLOSED:
            return f"for the lab's closed loop of {load.concurrency} in flight (now {rate_rps:,.0f}/s)"
        return f"at {rate_rps:,.0f}/s"
    return words
