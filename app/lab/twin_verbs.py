"""The WhatIf port: the twin, calibrated from what the server already reports, asked before a change is made.

A part of app.lab.root.Lab (a mixin): its verbs read the parts Lab.create wired (_metrics, _config, _load, _twin,
_predictions, _store)."""
from __future__ import annotations

import threading
import time
from collections import OrderedDict

from app.config.errors import ConfigError
from app.config.read import settings_of
from app.config.settings import ModelSettings
from app.metrics.statistics_api import ModelStats, stats_reset
from app.timeline.figures import Figures
from app.timeline.meter import Edge
from app.twin.batcher import Unsupported, instance_count, unmodelled
from app.twin.calibrate import calibrate_from_stats, reproduced
from app.twin.calibration import Calibration
from app.twin.from_spec import load_of
from app.twin.load import Load
from app.store.database import Experiment
from app.text_limits import MAX_LABEL_CHARS
from app.twin.checks import KIND as CHECK_KIND, PredictionCheck, measured_dict, predicted_dict
from app.twin.predict import Prediction, predict
from loadgen.spec import Mode
from loadgen.stats import ALL

WINDOW_S = 30.0  # the executions a calibration reads: the last half minute of what the poller kept
MIN_EXECUTIONS = 20  # fewer in the window: nothing new to learn from it
REPLICATIONS = 3  # per prediction on a page: about 0.1-0.5 s of CPU (app/twin/predict.py)
CACHED = 64
IMPACT_S = 10.0  # the window after a change a prediction is measured in (Measure.impact's span)
# A window the twin learns from begins this long after the traffic last started, changed or stopped: one load, in
# its steady state. A 30 s window across loads noted their mix as one window, its clients' rate the average and its
# tail the worst load's: with bench/twin_accuracy --learn (2026-12-07, run AW), a window holding an open loop whose
# tail had tipped over (35 and 89 ms) and the slower loads beside it made the twin say 17-37 ms for loads measured at
# 3.5. The open loop's first second is not its steady state either (mlp at 4,500 req/s: up to 34.7 ms in it, 2.1-9.4
# ms in the seconds after, /tmp/s14/warm2.py).
TRAFFIC_WARM_S = 1.0


class PredictionCache:
    """The last predictions asked, by (model, settings, load, what the twin knew): a page redraw asks again."""

    def __init__(self, size: int = CACHED) -> None:
        self._kept: OrderedDict[tuple, Prediction] = OrderedDict()
        self._size, self._lock = size, threading.Lock()

    def get(self, key: tuple, make) -> Prediction:
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        value = make()
        with self._lock:
            self._kept[key] = value
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return value


class TwinVerbs:
    """The twin: its calibration of a model, and what it predicts a config does under a load."""

    def calibration(self, model: str, window_s: float = WINDOW_S) -> Calibration | None:
        """Return the twin's calibration of a model: the executions of the last window_s since its last change and
        since its traffic last started, changed or stopped (noted at most every 10 s, when there were enough),
        merged with what earlier windows taught at other instance counts; None before any was seen."""
        now = time.time()
        change = self._markers.last_change(model)  # executions before a reload ran another config
        traffic = self._markers.last_change(model, ("traffic",))  # before it, another load (TRAFFIC_WARM_S)
        start = max(now - window_s, change.settled + 1.0 if change is not None else 0.0,
                    traffic.t + TRAFFIC_WARM_S if traffic is not None else 0.0)
        if self._twin.due(model, now) and now - start >= 5.0:
            self.learn(model, start, now)
        return self._twin.calibration(model)

    def learn(self, model: str, t0: float, t1: float) -> bool:
        """Note the model's executions of [t0, t1) with the twin (the config serving now ran them), from the
        poller's seconds; return whether there were enough to learn from."""
        stats = self._metrics.stats_window(model, t0, t1)
        return self._learn(model, None, stats, lambda: self.measure(model, t0, t1, include_held=False), t1 - t0,
                           self._metrics.host_cpu(t0, t1))

    def learn_edges(self, model: str, before: Edge, after: Edge, figures: Figures,
                    p99_parts_ms: tuple[float, ...] = ()) -> bool:
        """Note the model's executions between two edges of a meter (the statistics API read at each: exact, not
        the poller's whole seconds) with the twin, figures the window's (p99_parts_ms: the clients' p99 of every
        window its level was cut into, this one's among them); return whether there were enough."""
        if before.stats is None or after.stats is None:
            return False
        return self._learn(model, before.stats, after.stats, lambda: figures, after.t - before.t, after.cpu_util,
                           tuple(p99 * 1e3 for p99 in p99_parts_ms))

    def _learn(self, model: str, before: ModelStats | None, after: ModelStats, figures_of, window_s: float,
               host_cpu: float | None = None, p99_parts_us: tuple[float, ...] = ()) -> bool:
        try:
            settings = settings_of(self._config.current(model))
        except ConfigError:
            return False
        base = before if before is not None and not stats_reset(before, after) else None  # a reload zeroes them
        executions = after.execution_count - (base.execution_count if base is not None else 0)
        if executions < MIN_EXECUTIONS or self._markers.reloading(model):
            return False
        figures = figures_of()
        row, server = figures.row(ALL), figures.server
        # The request's time outside what the twin simulates (queue and compute): the client, HTTP, Triton's own
        # handling of the request.
        simulated_us = (server.queue_us + server.compute_us if server.queue_us is not None
                        and server.compute_us is not None else None)
        overhead = max(0.0, row.mean_ms * 1e3 - simulated_us) if row.mean_ms and simulated_us else None
        spec = self._load.spec
        ours = spec is not None and spec.targets() == {model}  # the window's traffic is the lab's, to this model
        try:
            calibration = calibrate_from_stats(
                before, after, settings, overhead, window_s=window_s, client_rps=row.throughput_rps or None,
                client_p99_us=row.p99_ms * 1e3 if row.p99_ms and overhead is not None else None,
                server_us=simulated_us if overhead is not None else None,
                open_loop=spec.mode != Mode.CLOSED if ours else None, host_cpu=host_cpu,
                p99_parts_us=p99_parts_us)
        except ValueError:  # no execution inside after all (a reset at its edge)
            return False
        if ours:  # the window's traffic, to see the twin reproduce it
            try:
                calibration = reproduced(self._twin.calibration(model), calibration, settings, load_of(spec))
            except ValueError:  # traffic the twin does not model (sequences)
                pass
        self._twin.note(model, instance_count(settings), calibration, time.time())
        return True

    def twin_load(self, model: str, rate: float | None = None, concurrency: int | None = None) -> Load | None:
        """Return the twin's load for the traffic the lab sends the model now (or sent last), None when none has."""
        spec = self._load.spec
        if spec is None or model not in spec.targets():
            return None
        return load_of(spec, rate=rate, concurrency=concurrency)

    def predict(self, model: str, settings: ModelSettings, load: Load | None = None) -> Prediction:
        """Return what the twin expects settings to do under load (default: the lab's traffic to the model);
        ValueError when the model is an ensemble (its steps have the queues), the twin has seen no execution of it,
        or there is no traffic to predict for."""
        calibration = self.calibration(model)
        load = load or self.twin_load(model)
        if calibration is None or load is None:
            self._modelled(model)  # an ensemble's reason comes first: traffic would not help
            if calibration is None:
                raise ValueError(f"the twin has seen no execution of {model} yet: run traffic to it (or a probe) first")
            raise ValueError(f"no traffic to predict for: start traffic to {model}, or give the load")
        key = (model, repr(settings), repr(load), self._twin.version)

        def make() -> Prediction:  # the served config is read only when no prediction is kept: a page redraw, or
            self._modelled(model)  # the autopilot sizing every few seconds, asks again without a request
            return predict(calibration, settings, load, replications=REPLICATIONS)
        return self._predictions.get(key, make)

    def _modelled(self, model: str) -> None:
        """Raise Unsupported, with the reason, for a model whose served config the twin does not model (an
        ensemble, sequence batching); nothing when it does, or the server cannot say now."""
        try:
            why = unmodelled(model, self._config.current(model))
        except ConfigError:
            return
        if why:
            raise Unsupported(why)

    def note_prediction(self, model: str, prediction: Prediction) -> int | None:
        """Keep what the twin predicted for the change just applied to the model (its newest change): a stored
        run of kind 'prediction', measured once the change has shown (prediction_checks); None without a change."""
        change = self._markers.last_change(model, ("apply", "undo"))
        if change is None:
            return None
        return self._store.add_run(Experiment(
            f"the twin on: {change.text}"[:MAX_LABEL_CHARS], model, self._config.current_text(model), change.t,
            kind=CHECK_KIND, outcome={"change": change.text, "marker": change.id, "predicted": predicted_dict(prediction),
                                      "measured": None}))

    def prediction_checks(self, model: str, limit: int = 5) -> list[PredictionCheck]:
        """Return the model's latest predictions beside what was measured after each change (measured, and stored,
        once the window after the change is complete)."""
        out = []
        for run in self._store.runs(model=model, kind=CHECK_KIND)[:limit]:
            outcome = run.outcome or {}
            if not isinstance(outcome.get("predicted"), dict):
                continue  # a damaged row: nothing to compare
            measured = outcome.get("measured")
            if measured is None:
                marker = self._markers.find(outcome.get("marker"))
                after = self.impact(marker, model)["after"] if marker is not None else None
                if after is not None and after.seconds >= IMPACT_S - 0.5 and after.samples():
                    measured = measured_dict(after)
                    self._store.set_outcome(run.id, {**outcome, "measured": measured})
            out.append(PredictionCheck(run.id, outcome.get("change", ""), run.started_at or 0.0, outcome["predicted"], measured))
        return out
