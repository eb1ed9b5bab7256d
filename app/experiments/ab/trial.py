"""One arm's run in one trial of a comparison: the figures the intervals are drawn from, and what else it keeps."""
from __future__ import annotations

from dataclasses import dataclass, field

from app.store.database import Experiment
from app.timeline.figures import Figures


@dataclass(frozen=True)
class Trial:
    """A trial of one arm: its figures (merged over its windows), the windows, its stored run and, on a rate trace,
    its score (app.experiments.trace.judge.TraceScore.to_dict)."""

    figures: Figures
    windows: list = field(default_factory=list)  # meter.MeasuredWindow.to_dict of each measurement window
    id: int | None = None  # the stored run
    trace: dict | None = None

    @classmethod
    def of(cls, run: Experiment) -> Trial:
        """Return the trial a stored run holds."""
        return cls(run.window(), run.windows, run.id, run.outcome.get("score") or None)
