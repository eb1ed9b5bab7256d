"""The experiment store is durable, and comparisons use each metric's direction."""
from __future__ import annotations

import pytest

from app.experiments.compare import capture, compare
from app.experiments.store import Experiment, ExperimentStore
from app.figures import WindowFigures
from loadgen.spec import LoadSpec


def test_experiments_survive_a_new_store_object(tmp_path):
    path = tmp_path / "exp.sqlite"
    exp_id = ExperimentStore(path).add(Experiment("delay 500", "gpu_sim", "max_batch_size: 8\n",
                                                  client={"all": {"p99_ms": 12.5}}, server={"avg_batch": 3.0}))
    again = ExperimentStore(path)
    got = again.get(exp_id)
    assert (got.label, got.client["all"]["p99_ms"], got.server["avg_batch"]) == ("delay 500", 12.5, 3.0)
    assert [e.id for e in again.list("gpu_sim")] == [exp_id] and again.list("mlp") == []
    again.delete(exp_id)
    with pytest.raises(KeyError):
        again.get(exp_id)


def test_compare_of_two_single_runs_shows_changes_and_names_no_winner():
    a = Experiment("A", "gpu_sim", "", client={"all": {"p99_ms": 20.0, "throughput_rps": 500}}, server={"avg_batch": 2.0})
    b = Experiment("B", "gpu_sim", "", client={"all": {"p99_ms": 10.0, "throughput_rps": 400}}, server={"avg_batch": 2.0})
    rows = {r["metric"]: r for r in compare(a, b)}
    assert rows["client p99 (ms)"]["change"] == "-50%" and rows["client ok throughput (req/s)"]["change"] == "-20%"
    assert all("better" not in r for r in rows.values())  # one run each: no idea of the noise, no verdict


def test_capture_keeps_the_window_figures_and_the_spec():
    figures = WindowFigures("gpu_sim", 100.0, 110.0, server={"avg_batch": 4.0, "infer_count": 400.0},
                            client={"all": {"p99_ms": 5.0, "latency_n": 400}})
    exp = capture("run", "gpu_sim", "cfg", LoadSpec(), figures)
    assert (exp.started_at, exp.ended_at) == (100.0, 110.0)
    assert exp.server["avg_batch"] == 4.0 and exp.server["infer_count"] == 400.0
    assert exp.client["all"]["p99_ms"] == 5.0 and exp.spec["concurrency"] == LoadSpec().concurrency
