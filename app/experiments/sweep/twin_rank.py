"""A sweep that measures only what can change the answer: the twin ranks every configuration of the space by its
predicted operating point, the top ones are measured (from the load the twin expects to be their best), and the
recommendation rests on those measurements alone — a prediction is never the answer.

TwinSearch is a search like search.GridSearch (next() / record(point)): it starts at the predicted best load and
walks up while the measured point holds the SLA, down while it does not, so a right prediction costs two points.
"Holds" is with room (SearchSpace.holds), for the prediction and the measurement alike.
"""
from __future__ import annotations

from dataclasses import dataclass

from app.config.errors import ConfigError
from app.config.read import settings_of
from app.experiments.sweep.points import Point
from app.experiments.sweep.space import Choice, SearchSpace
from app.store.database import FAILED
from app.twin.calibration import Calibration
from app.twin.from_spec import load_of
from app.twin.predict import capacity_bound, predict
from loadgen.spec import LoadSpec, Mode

RANK_S = 12.0  # at most, simulated seconds per ranked point
RANK_MIN_S = 2.0  # at least: a closed loop at low concurrency answers a few hundred in it
RANK_REQUESTS = 4000  # enough answers for a p99 to rank by; at thousands of req/s 12 s would simulate 35,000 (14 s of
# CPU to rank a 16-configuration space, half the twin-ranked sweep's time in bench/vs_model_analyzer --space large)
RANK_REPLICATIONS = 2
# Predicted goodputs closer than this cannot be told apart: the twin's saturation error on gpu_sim was 2-9 % (median
# 6 %, docs/MEASUREMENTS.md#the-twin). The large space of bench/vs_model_analyzer had Model Analyzer's choice ranked
# #3 by the twin, 661 req/s predicted; measuring only the top 2 then chose another configuration.
TIE = 0.10


@dataclass(frozen=True)
class Ranked:
    """One configuration as the twin sees it: its best load inside the SLA and the goodput there."""

    choice: Choice
    load: float | None  # the highest load whose predicted p99 holds the SLA (None: none does)
    goodput: float  # predicted throughput there (0 when no load holds)
    p99_ms: float | None
    note: str = ""  # why it could not be ranked (a config the twin does not model)

    def to_dict(self) -> dict:
        """Return what a study stores of the ranking."""
        return {"choice": self.choice.key, "label": self.choice.label, "load": self.load,
                "predicted_goodput_rps": round(self.goodput, 1), "predicted_p99_ms": self.p99_ms, "note": self.note}


def rank(space: SearchSpace, choices: list[Choice], base, calibration: Calibration, spec_of) -> list[Ranked]:
    """Return the choices ranked by predicted operating point, best first (spec_of(load) -> the LoadSpec a point
    runs); a choice the twin cannot model ranks last, with its reason."""
    out = []
    for choice in choices:
        try:
            settings = settings_of(choice.config(base))
        except (ConfigError, ValueError) as exc:
            out.append(Ranked(choice, None, 0.0, None, f"not ranked: {exc}"))
            continue
        out.append(_best(space, choice, settings, calibration, spec_of))
    return sorted(out, key=lambda r: (-r.goodput, r.p99_ms if r.p99_ms is not None else float("inf")))


def _best(space: SearchSpace, choice: Choice, settings, calibration: Calibration, spec_of) -> Ranked:
    """Walk the loads down from the highest until the prediction holds the SLA; return that one (none: no load
    holds). From the top, since the heavy loads are what a simulation spends its time on and the boundary lies
    near them: 2 predictions a configuration where walking up took 5 (and a minimum throughput that the light
    loads miss no longer ends the walk before it reaches the loads that meet it)."""
    try:
        ceiling = capacity_bound(calibration, settings)
    except ValueError as exc:  # sequence batching, or a config the twin does not model
        return Ranked(choice, None, 0.0, None, f"not ranked: {exc}")
    for load in reversed(space.loads):
        spec: LoadSpec = spec_of(load)
        rate = ceiling if spec.mode == Mode.CLOSED else min(ceiling, float(spec.rate))
        seconds = min(RANK_S, max(RANK_MIN_S, RANK_REQUESTS / max(rate, 1e-9)))
        try:
            figures = predict(calibration, settings, load_of(spec, seconds), replications=RANK_REPLICATIONS)
        except ValueError as exc:  # sequence batching, or a load the twin does not model
            return Ranked(choice, None, 0.0, None, f"not ranked: {exc}")
        p99, throughput = figures.p99_ms.value, figures.throughput_rps.value
        if space.holds(p99, throughput):
            return Ranked(choice, load, throughput, round(p99, 2))
    return Ranked(choice, None, 0.0, None)


def kept(ranked: list[Ranked], top: int) -> list[Ranked]:
    """Return the ranked choices a sweep measures: the top ones that hold the SLA somewhere (at least one), and after
    them, up to `top` more, those the twin cannot tell from the last of them (predicted goodput within TIE of it)."""
    holding = [r for r in ranked if r.load is not None]
    first = (holding or ranked)[:max(1, top)]
    if not holding:
        return first
    floor = (1 - TIE) * first[-1].goodput
    return first + [r for r in holding[len(first):] if r.goodput >= floor][:max(1, top)]


def ranking_error(record: dict) -> float | None:
    """Return how far the twin's goodput for a configuration it ranked lay from the sweep's measured one (predicted /
    measured - 1), from the ranking's stored record; None where either is missing or the twin put no operating point
    inside the SLA. The command line's summary and the page's table both say it."""
    predicted, measured = record.get("predicted_goodput_rps"), record.get("measured_goodput_rps")
    if record.get("load") is None or not predicted or not measured:
        return None
    return predicted / measured - 1


class TwinSearch:
    """Start at the twin's best load; go up while the SLA holds, down while it does not."""

    def __init__(self, space: SearchSpace, start: float | None) -> None:
        self.space = space
        self.loads = space.loads
        self._i = self.loads.index(start) if start in self.loads else 0
        self._step = 0  # +1 going up, -1 going down, 0 before the first point
        self._held: dict[int, bool] = {}
        self.skipped = ""

    def next(self) -> float | None:
        """Return the next load to measure, None when the boundary is found."""
        if self._i is None or not 0 <= self._i < len(self.loads) or self._i in self._held:
            return None
        return self.loads[self._i]

    def record(self, point: Point) -> None:
        """Take the point measured at the load next() returned."""
        if point.status == FAILED:
            self._i = None
            return
        held = self.space.holds(point.p99, point.throughput)
        self._held[self._i] = held
        if self._step == 0:
            self._step = 1 if held else -1
        if (self._step == 1 and not held) or (self._step == -1 and held):
            self._i = None  # the boundary: the last load that held is the operating point
            return
        self._i += self._step
