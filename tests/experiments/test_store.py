"""The experiment store is durable, and comparisons use each metric's direction."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.experiments.compare import capture, compare
from app.experiments.store import Experiment, ExperimentStore


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


def test_compare_marks_the_better_side_by_metric_direction():
    a = Experiment("A", "gpu_sim", "", client={"all": {"p99_ms": 20.0, "throughput_rps": 500}}, server={"avg_batch": 2.0})
    b = Experiment("B", "gpu_sim", "", client={"all": {"p99_ms": 10.0, "throughput_rps": 400}}, server={"avg_batch": 2.0})
    rows = {r["metric"]: r for r in compare(a, b)}
    assert rows["client p99 (ms)"]["better"] == "B" and rows["client p99 (ms)"]["change"] == "-50%"
    assert rows["client throughput (req/s)"]["better"] == "A"
    assert rows["server Average batch size (inferences)"]["better"] == "—"


def test_capture_takes_server_rows_of_the_run_only():
    snap = SimpleNamespace(spec=None, started_at=100.0, elapsed_s=10.0, summary={"all": {"p99_ms": 5.0}})
    rows = [{"t": 90.0, "avg_batch": 1.0}, {"t": 101.0, "avg_batch": 4.0}, {"t": 105.0, "avg_batch": 6.0}]
    exp = capture("run", "gpu_sim", "cfg", snap, rows)
    assert exp.server["avg_batch"] == 5.0 and exp.ended_at == 110.0 and exp.client["all"]["p99_ms"] == 5.0
