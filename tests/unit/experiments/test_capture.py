"""A run captured with its window figures and spec; two runs compared metric by metric with no verdict (a damaged
run shows a dash); and on a FakeLab a saved run keeps the time since the model's last change, up to the run's end,
second by second."""
from __future__ import annotations

import sqlite3
import time

import pytest

from app.experiments.capture import capture, compare, save_run
from app.timeline.meter import MeasuredWindow
from app.store.database import Experiment, ExperimentStore
from app.timeline.figures import Figures
from app.timeline.markers import MarkerLog
from app.timeline.sides import ClientFigures, ServerFigures
from loadgen.spec import LoadSpec

MODEL = "gpu_sim"


def test_compare_of_two_single_runs_shows_changes_and_names_no_winner():
    a = Experiment("A", "gpu_sim", "", client={"all": {"p99_ms": 20.0, "throughput_rps": 500}}, server={"avg_batch": 2.0})
    b = Experiment("B", "gpu_sim", "", client={"all": {"p99_ms": 10.0, "throughput_rps": 400}}, server={"avg_batch": 2.0})
    rows = {r["metric"]: r for r in compare(a, b)}
    assert rows["client p99 (ms)"]["change"] == "-50%" and rows["client ok throughput (req/s)"]["change"] == "-20%"
    assert all("better" not in r for r in rows.values())  # one run each: no idea of the noise, no verdict


def test_capture_keeps_the_window_figures_and_the_spec():
    figures = Figures("gpu_sim", 100.0, 110.0, server=ServerFigures(avg_batch=4.0, infer_count=400.0),
                      client={"all": ClientFigures(p99_ms=5.0, latency_n=400)})
    exp = capture("run", "gpu_sim", "cfg", LoadSpec(), figures)
    assert (exp.started_at, exp.ended_at) == (100.0, 110.0)
    assert exp.server["avg_batch"] == 4.0 and exp.server["infer_count"] == 400.0
    assert exp.client["all"]["p99_ms"] == 5.0 and exp.spec["concurrency"] == LoadSpec().concurrency


def test_a_damaged_run_compares_with_a_dash_never_an_error(tmp_path):
    store = ExperimentStore(tmp_path / "exp.sqlite")
    run = store.add_run(Experiment("r", "m", "cfg", client={"all": {"p99_ms": 2.0}}))
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE experiments SET client = '{\"all\": {\"p99_ms\": \"fast\"}}' WHERE id = ?", (run,))
    got = store.run(run)
    rows = {r["metric"]: r for r in compare(got, got)}
    assert got.broken and rows["client p99 (ms)"]["A"] == "—" and rows["client p99 (ms)"]["change"] is None


def test_a_saved_run_covers_the_run_up_to_its_end_and_keeps_each_second(fake):
    fake.start_traffic(LoadSpec(model=MODEL, concurrency=4, duration_s=60.0, seed=5), ran_s=12)
    fake.stop_traffic()
    ended = fake.traffic_snapshot(0).started_at + fake.traffic_snapshot(0).elapsed_s
    saved = save_run(fake, "after the change", now=ended + 20)  # saved 20 s later: the idle time is not counted
    assert saved.ended_at <= ended + 0.5 and saved.ended_at - saved.started_at >= 10, (saved.started_at, ended)
    assert saved.seed == 5 and saved.spec["seed"] == 5 and saved.config_text == fake.served_text(MODEL)
    seconds = [MeasuredWindow.from_dict(w) for w in saved.windows]
    assert 10 <= len(seconds) <= saved.ended_at - saved.started_at + 1
    assert all(abs(w.seconds - 1.0) < 1e-6 for w in seconds)
    per_second_ok = sum(w.figures().row().ok for w in seconds if w.buckets)
    assert per_second_ok == saved.client["all"]["ok"] > 0, (per_second_ok, saved.client["all"]["ok"])
    assert fake.run(saved.id).label == "after the change"


def test_a_saved_run_starts_a_second_after_the_models_last_change_settled(fake):
    fake.start_traffic(LoadSpec(model=MODEL, concurrency=4, duration_s=60.0, seed=5), ran_s=12)
    now = time.time()
    log = MarkerLog(clock=lambda: now - 6)
    change = log.finish(log.begin(MODEL, "apply", "delay 500 → 1000"))  # settled 6 s ago
    fake.last_change = lambda model, kinds=("apply", "undo", "restart"): change  # the port's verb, answered here
    saved = save_run(fake, "since the change", now=now)
    assert saved.started_at == pytest.approx(change.settled + 1.0) and saved.ended_at <= now
    assert 4 <= len(saved.windows) <= 5, len(saved.windows)
    log = MarkerLog(clock=lambda: time.time() - 1)
    recent = log.finish(log.begin(MODEL, "apply", "just now"))
    fake.last_change = lambda model, kinds=("apply", "undo", "restart"): recent
    with pytest.raises(ValueError, match="less than 2 s of traffic since the last config change"):
        save_run(fake, "too soon")
