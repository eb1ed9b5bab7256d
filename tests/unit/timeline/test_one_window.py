"""One window, one set of numbers: every path that reads a window's figures — the live Figures, a stored run, a sweep
point, a scenario phase, the diagnosis's Symptoms, a stored window read back — gives the same values."""
from __future__ import annotations

import json

import numpy as np

from app.config.settings import DynamicBatching, ModelSettings
from app.diagnosis.diagnose import window_from
from app.timeline.meter import MeasuredWindow
from app.experiments.sweep.points import Point
from app.experiments.sweep.space import Choice
from app.store.database import Experiment, ExperimentStore
from app.timeline.figures import Figures
from app.scenarios.base import PhaseFigures
from loadgen.spec import ALL
from tests.unit.experiments.samples import T0, window

KEYS = ("p50_ms", "p99_ms", "throughput_rps", "goodput_rps", "queue_us", "compute_us", "avg_batch", "infer_rps")


def test_every_consumer_reads_the_same_numbers_from_one_window(tmp_path):
    measured = window(T0, 5.0, 300.0, 12.0, np.random.default_rng(7), cls=ALL, batch=4.0)
    live = measured.figures("gpu_sim")
    truth = {k: live.get(k) for k in KEYS}
    assert all(v is not None for v in truth.values()), truth  # a window with every figure measured

    store = ExperimentStore(tmp_path / "store.sqlite")
    run_id = store.add_run(Experiment("run", "gpu_sim", "cfg", measured.t0, measured.t1, client=live.client_dicts(),
                                  server=live.server.to_dict(), windows=[measured.to_dict()]))
    stored = store.run(run_id)
    point = Point(Choice(instances=1), 8.0, figures=stored.window())
    phase = PhaseFigures("gpu_sim", measured.t0, measured.t1, live.server, live.client)
    read_back = MeasuredWindow.from_dict(stored.windows[0]).figures()

    paths = {
        "a stored run": stored.window(),
        "a sweep point": point.figures,
        "a scenario phase": phase,
        "a stored window read back": read_back,
        "its stored form read back": Figures.from_dict(json.loads(json.dumps(live.to_dict()))),
    }
    for name, figures in paths.items():
        got = {k: figures.get(k) for k in KEYS}
        assert got == truth, f"{name}: {got} != {truth}"
    assert {k: point.get(k) for k in KEYS} == truth
    assert (phase.c("p99_ms"), phase.s("queue_us")) == (truth["p99_ms"], truth["queue_us"])

    symptoms = window_from(live, ModelSettings(max_batch_size=32, dynamic_batching=DynamicBatching()))
    assert (symptoms.p50_ms, symptoms.p99_ms, symptoms.queue_us, symptoms.compute_us, symptoms.avg_batch,
            symptoms.infer_rps) == tuple(truth[k] for k in ("p50_ms", "p99_ms", "queue_us", "compute_us", "avg_batch",
                                                             "infer_rps"))
