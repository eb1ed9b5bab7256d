"""A short probe that calibrates the twin: a few seconds of closed-loop traffic at a few levels of concurrency, so
the server forms small and large batches, each level noted as a window of its own (no config is changed)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from app.config.read import settings_of
from app.lab.jobs import FunctionJob
from app.lab.ports import StudyLab
from app.traffic.form import TrafficForm, build_spec
from app.twin.batcher import instance_count
from app.twin.calibration import Calibration

LEVEL_S = 1.0  # each level's measured window, between two reads of the statistics API (exact edges)
WARM_S = 0.3  # each level's traffic before it: the queue filling at the level's concurrency
MAX_LEVEL = 64  # the most requests in flight a probe sends


@dataclass
class ProbeProgress:
    """What the page shows while a probe runs."""

    level: int = 0
    levels: int = 0
    concurrency: int = 0
    study_id: int | None = None  # a probe stores no study


def levels(settings, most: int = MAX_LEVEL) -> list[int]:
    """Return the concurrencies a probe sends: one alone (batches of one), every instance's largest batch (the
    largest batches), and one between (4 on a model that batches to 32): the batch sizes the twin fits its curve to."""
    top = min(max(1, settings.max_batch_size) * instance_count(settings), most)
    middle = max(2, round((top ** 0.5))) if top > 2 else top
    return sorted({1, middle, top})


def probe(lab: StudyLab, model: str, level_s: float = LEVEL_S, progress: Callable | None = None,
          cancel: threading.Event | None = None) -> Calibration | None:
    """Send closed-loop traffic to model at each level in turn, note each level's executions between a meter's
    exact edges with the twin, and return its calibration; the traffic that ran before runs again after (None: it
    learnt nothing). About 1.5 s a level (it was 3 s when each level waited for the poller's whole seconds)."""
    found = lab.traffic().spec if lab.traffic().running else None
    config = lab.served_config(model)
    settings = settings_of(config)
    spec = build_spec(TrafficForm(model=model, mode="closed", concurrency=1, duration_s=60.0), config)
    state = ProbeProgress(levels=len(levels(settings)))
    lab.stop_traffic(f"traffic stopped: the twin's probe of {model} takes over")
    meter = lab.meter(model)
    try:
        for k, concurrency in enumerate(levels(settings), 1):
            if cancel is not None and cancel.is_set():
                break
            state.level, state.concurrency = k, concurrency
            if progress is not None:
                progress(state)
            # it ends by itself should this level end early with an error
            lab.start_traffic(replace(spec, concurrency=concurrency, duration_s=WARM_S + level_s + 5.0))
            meter.wait_until(time.time() + WARM_S, cancel)
            start = meter.edge()
            meter.discard_before(start.t)
            meter.wait_until(start.t + level_s, cancel)
            end = meter.edge()
            window = meter.window(start, end)
            lab.stop_traffic(f"traffic stop: probe level {concurrency} in flight")
            lab.learn_edges(model, start, end, window.figures(model))
    finally:
        meter.close()
        if found is not None:
            lab.start_traffic(found)
    return lab.calibration(model)


def probe_job(lab: StudyLab, model: str) -> FunctionJob:
    """Return the probe as the lab's background job (the page's Calibrate button)."""
    return FunctionJob("probe", f"the twin's probe of {model}", lambda progress, cancel: probe(
        lab, model, progress=progress, cancel=cancel))
