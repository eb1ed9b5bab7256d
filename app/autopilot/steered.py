"""The autopilot judged on a trace: play a trace once while the autopilot steers the model, measured second by second
exactly as a trace-judged sweep measures a static configuration (app.experiments.trace.play.play) and scored by the
same rule (app.experiments.trace.judge.score), with the instances each second served — so an autopilot run and a
static configuration compare figure for figure (goodput, worst-minute p99, seconds over the SLA, instance-seconds)."""
from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.autopilot.pilot import Bounds
from app.autopilot.forecast import Forecast, ForecastClock
from app.autopilot.job import PERIOD_S, WINDOW_S, AutopilotJob, AutopilotResult, unsteerable
from app.autopilot.rules import KnobState
from app.config.read import settings_of
from app.experiments.driving import StudyDriver
from app.timeline.meter import merged
from app.lab.ports import StudyLab
from app.experiments.trace.judge import TraceScore, score
from app.experiments.trace.play import TraceLoad, play
from loadgen.rate_trace.trace_load import played_s
from loadgen.stats import slas_of

MARK = "autopilot: "  # the autopilot's own reloads: the playback expects them (anyone else's interrupts it)


@dataclass(frozen=True)
class SteeredRun:
    """A trace played under the autopilot: its score, the autopilot's run, and the instances of each second."""

    score: TraceScore
    autopilot: AutopilotResult
    counts: tuple[int, ...]  # instances served in each one-second window


class _Steered(StudyDriver):
    """A playback's driver that lets the autopilot's own reloads through (any other change still interrupts)."""

    what = "autopilot playback"

    def check_undisturbed(self, lab_traffic: bool = True) -> None:
        change = self.lab.last_change(self.model, kinds=("apply", "undo"))
        if change is not None and change.text.startswith(MARK):
            self.own_change = change.id
        super().check_undisturbed(lab_traffic)


def play_steered(lab: StudyLab, model: str, bounds: Bounds, load: TraceLoad, sla_ms: float, seed: int = 1, *,
                 window_s: float = WINDOW_S, period_s: float = PERIOD_S, cancel: threading.Event | None = None,
                 progress: Callable[[object], None] | None = None, forecast: Forecast | None = None) -> SteeredRun:
    """Play load's trace once on model while the autopilot steers it within bounds; return the run's score.
    forecast: a rate curve aligned to the playback's start (the played trace, or another day's), which the
    autopilot sizes ahead of; None: it reacts to the windows alone. ValueError, before the trace plays, for a model
    the autopilot cannot steer (an ensemble)."""
    spec = load.spec(model, sla_ms, seed)
    cancel = cancel or threading.Event()
    served = lab.served_config(model)
    why = unsteerable(model, served)
    if why:  # before the trace plays
        raise ValueError(why)
    start_count = KnobState.of(settings_of(served)).instances
    begun = time.time()

    def started() -> float | None:  # the playback's own start (the generator's earlier runs say nothing)
        t0 = lab.traffic().last_started_at
        return t0 if t0 is not None and t0 >= begun else None

    job = AutopilotJob(lab, model, bounds, window_s=window_s, period_s=period_s,
                       label=f"autopilot on {model} under {load.describe()}"
                             + (f", forecast: {forecast.source}" if forecast is not None else ""),
                       forecast=ForecastClock(forecast, started) if forecast is not None else None, since=started)
    off = threading.Event()
    out: dict = {}
    pilot = threading.Thread(target=lambda: out.update(result=job.run(progress or (lambda p: None), off)),
                             name="tbl-autopilot-play", daemon=True)
    with lab.meter(model, slas_of(spec)) as meter:
        driver = _Steered(lab, model, 0, cancel)
        pilot.start()
        try:
            windows = play(driver, meter, spec, "autopilot playback")
        finally:
            off.set()
            pilot.join(60)
    result: AutopilotResult = out["result"]
    served = [(t, n) for rec in job.records for t, n in served_counts(rec)]
    counts = tuple(count_at(served, start_count, (w.t0 + w.t1) / 2) for w in windows)
    judged = score(windows, played_s(spec.arrival), sla_ms, list(counts), merged(windows).figures().behind())
    return SteeredRun(judged, result, counts)


def served_counts(record: dict) -> list[tuple[float, int]]:
    """Return when each instance count a recorded window's decision applied began to serve: every reload of a
    stepwise add, else the one change (none when nothing was applied or the count did not change)."""
    if record.get("reloads"):
        return [(float(t), int(n)) for t, n in record["reloads"]]
    knobs = record["decision"]["knobs"]
    return [(record["applied_t"], int(knobs["instance_count"]))] if "applied_t" in record and \
        "instance_count" in knobs else []


def count_at(changes: list[tuple[float, int]], start: int, t: float) -> int:
    """Return the instances serving at t: the last change applied before t, else the count at the start."""
    i = bisect.bisect_right([c[0] for c in changes], t)
    return changes[i - 1][1] if i else start

