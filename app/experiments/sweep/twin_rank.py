"""A sweep that measures only what can change the answer: the twin ranks every configuration of the space by its
predicted operating point, the top ones are measured (from the load the twin expects to be their best), and the
recommendation rests on those measurements alone — a prediction is never the answer.

TwinSearch is a search like search.GridSearch (next() / record(point)): it starts at the predicted best load and
walks up while the measured point holds the SLA, down while it does not, so a right prediction costs two points.
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
from app.twin.predict import predict
from loadgen.spec import LoadSpec

RANK_S = 12.0  # simulated seconds per ranked point: enough for a p99 of a thousand requests, quick to rank many
RANK_REPLICATIONS = 2


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
    """Walk the loads up until the predicted p99 breaks the SLA; return the last that held."""
    best = Ranked(choice, None, 0.0, None)
    for load in space.loads:
        spec: LoadSpec = spec_of(load)
        try:
            figures = predict(calibration, settings, load_of(spec, RANK_S), replications=RANK_REPLICATIONS)
        except ValueError as exc:  # sequence batching, or a load the twin does not model
            return Ranked(choice, None, 0.0, None, f"not ranked: {exc}")
        p99, throughput = figures.p99_ms.value, figures.throughput_rps.value
        if not space.meets_sla(p99, throughput):
            break
        best = Ranked(choice, load, throughput, round(p99, 2))
    return best


def kept(ranked: list[Ranked], top: int) -> list[Ranked]:
    """Return the ranked choices a sweep measures: the top ones that hold the SLA somewhere (at least one)."""
    holding = [r for r in ranked if r.load is not None]
    return (holding or ranked)[:max(1, top)]


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
        held = self.space.meets_sla(point.p99, point.throughput)
        self._held[self._i] = held
        if self._step == 0:
            self._step = 1 if held else -1
        if (self._step == 1 and not held) or (self._step == -1 and held):
            self._i = None  # the boundary: the last load that held is the operating point
            return
        self._i += self._step
