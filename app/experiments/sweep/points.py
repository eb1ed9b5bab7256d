"""One measured point of a sweep: a configuration at a load, its merged figures, whether they settled, its repeats —
the unit the search (app.experiments.sweep.sweeper) stores and the recommendation (app.experiments.sweep.recommend) reads."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from app.experiments.sweep.space import Choice
from app.store.database import DONE
from app.timeline.figures import Figures
from loadgen.behind import behind_here


@dataclass
class Point:
    """One measured (configuration, load): merged figures of its windows, whether they settled."""

    choice: Choice
    load: float
    status: str = DONE  # done, or failed: the configuration could not be applied
    stable: bool = False
    change: float = math.inf  # how much the last window moved p99/throughput
    figures: Figures = field(default_factory=Figures)  # its windows merged
    windows: list = field(default_factory=list)
    note: str = ""
    config_text: str = ""
    id: int | None = None
    t0: float | None = None
    t1: float | None = None
    repeats: list = field(default_factory=list)  # later measurements of it (figures then pool them: recommend.pooled)
    marked: str = ""  # why it cannot be named alone: its measurements disagree ('' when they do not)

    @property
    def key(self) -> str:
        """Return '<config key>@<load>'."""
        return point_key(self.choice, self.load)

    def get(self, key: str):
        """Return a figure of the whole point ('p99_ms', 'throughput_rps', 'avg_batch', ...), None if not measured."""
        return self.figures.get(key)

    @property
    def behind(self) -> float | None:
        """Return the share of requests sent behind their slot when the generator fell behind here (loadgen.behind)."""
        return self.figures.behind() if self.status == DONE else None

    def caution(self) -> str:
        """Return why this point's figures need measuring again before shipping on them, or ''."""
        out = []
        if self.status == DONE and not self.stable:
            out.append("its figures never settled (the window limit came first)")
        if self.marked:
            out.append(self.marked)
        if (share := self.behind) is not None:
            out.append(behind_here(share))
        return "; ".join(out) + ": measure it again before relying on it" if out else ""

    @property
    def throughput(self) -> float | None:
        return self.get("throughput_rps")

    @property
    def goodput(self) -> float | None:
        return self.get("goodput_rps")

    @property
    def p99(self) -> float | None:
        return self.get("p99_ms")


def point_key(choice: Choice, load: float) -> str:
    """Return the stored name of a point."""
    return f"{choice.key}@{load:g}"
