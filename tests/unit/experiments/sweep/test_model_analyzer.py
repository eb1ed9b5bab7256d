"""Model Analyzer's profile YAML says the same search as a SearchSpace; its recorded results read back as a Choice."""
from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
import yaml

from app.experiments.sweep.model_analyzer import ma_best_by_choice, ma_choice, ma_config_yaml
from app.experiments.sweep.space import RATE, Choice, SearchSpace

FIXTURE = Path(__file__).parent / "fixtures" / "model_analyzer"


def _profile(space: SearchSpace, **kwargs) -> dict:
    return yaml.safe_load(ma_config_yaml(space, "repo", "out", "export", **kwargs))


def test_the_brute_search_lists_the_space_and_its_sla():
    space = SearchSpace(instances=(1, 2), delays_us=(0, 2000), loads=(1, 2, 4, 8, 16), p99_budget_ms=40)
    doc = _profile(space)
    assert doc["run_config_search_disable"] is True and doc["triton_launch_mode"] == "local"
    model = doc["profile_models"]["gpu_sim"]
    assert model["cpu_only"] is True
    assert model["model_config_parameters"] == {
        "instance_group": [{"kind": "KIND_CPU", "count": [1, 2]}],
        "dynamic_batching": {"max_queue_delay_microseconds": [0, 2000]},
    }
    assert model["parameters"] == {"concurrency": [1, 2, 4, 8, 16]}
    assert model["constraints"] == {"perf_latency_p99": {"max": 40}}
    assert list(model["objectives"]) == ["perf_throughput"]


def test_batch_sizes_preferred_sizes_and_a_throughput_floor_when_the_space_has_them():
    space = SearchSpace(instances=(1,), delays_us=(), max_batch_sizes=(8, 16), preferred=((4, 8), (16,)),
                        min_throughput_rps=99.2, p99_budget_ms=12.7)
    model = _profile(space, instance_kind="KIND_GPU")["profile_models"]["gpu_sim"]
    params = model["model_config_parameters"]
    assert params["max_batch_size"] == [8, 16]
    assert params["instance_group"] == [{"kind": "KIND_GPU", "count": [1]}]
    assert params["dynamic_batching"] == {"preferred_batch_size": [[4, 8], [16]]}
    # Model Analyzer takes whole numbers: the constraint may only get stricter than ours.
    assert model["constraints"] == {"perf_latency_p99": {"max": 12}, "perf_throughput": {"min": 100}}


def test_a_rate_space_sweeps_request_rates():
    model = _profile(SearchSpace(load_kind=RATE, loads=(50, 100, 400)))["profile_models"]["gpu_sim"]
    assert model["parameters"] == {"request_rate": [50, 100, 400]}


def test_fractional_rates_are_refused_rather_than_rounded():
    with pytest.raises(ValueError, match="whole request_rate"):
        ma_config_yaml(SearchSpace(load_kind=RATE, loads=(12.5,)), "repo", "out", "export")


def test_a_space_without_the_default_says_model_analyzer_measures_it_anyway():
    with_default = ma_config_yaml(SearchSpace(include_default=True), "repo", "out", "export")
    without = ma_config_yaml(SearchSpace(include_default=False), "repo", "out", "export")
    assert "gpu_sim_config_default" not in with_default
    assert "gpu_sim_config_default" in without.split("model_repository:")[0]
    assert yaml.safe_load(with_default) == yaml.safe_load(without)  # 1.58 has no setting to skip it


def test_without_paths_the_export_is_portable_and_with_them_it_launches_here():
    portable = _profile(SearchSpace())
    assert not {"triton_server_path", "perf_analyzer_path", "triton_server_environment"} & set(portable)
    assert portable["triton_http_endpoint"] == "127.0.0.1:8000"
    local = _profile(SearchSpace(), triton_server_path="/w/tritonserver", perf_analyzer_path="/w/pa.sh",
                     backend_directory="/w/backends", venv_bin="/w/.venv/bin", library_path="/w/libs",
                     ports=(18000, 18001, 18002))
    assert local["triton_server_path"] == "/w/tritonserver" and local["perf_analyzer_path"] == "/w/pa.sh"
    assert local["triton_server_flags"]["backend-directory"] == "/w/backends"
    assert {local["triton_server_flags"][f"{k}-address"] for k in ("http", "grpc", "metrics")} == {"127.0.0.1"}
    assert local["triton_server_environment"] == {"PATH": "/w/.venv/bin:$PATH", "LD_LIBRARY_PATH": "/w/libs"}
    assert (local["triton_grpc_endpoint"], local["triton_metrics_url"]) == (
        "127.0.0.1:18001", "http://127.0.0.1:18002/metrics")
    assert local["checkpoint_directory"] == "export/checkpoints"  # never a stale ./checkpoints


def _fixture_rows(export: Path = FIXTURE) -> list[dict]:
    with (export / "results" / "metrics-model-inference.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_recorded_run_reads_back_as_the_best_row_under_the_constraint():
    space = SearchSpace(instances=(1, 2), delays_us=(0, 2000), p99_budget_ms=22)
    choice, figures = ma_choice(FIXTURE, space=space)
    assert choice == Choice(instances=2, delay_us=2000)  # gpu_sim_config_3 in that run
    passing = [r for r in _fixture_rows() if r["Satisfies Constraints"] == "Yes"]
    assert figures["throughput_rps"] == max(float(r["Throughput (infer/sec)"]) for r in passing)
    assert figures["satisfies"] and figures["p99_ms"] <= 22 and figures["load"] == 8
    assert figures["measurements"] == 25


def test_each_configuration_reads_back_as_its_best_measurement_inside_the_constraint():
    space = SearchSpace(instances=(1, 2), delays_us=(0, 2000), p99_budget_ms=22)
    best = ma_best_by_choice(FIXTURE, space)
    seen = {key: (f["throughput_rps"], f["load"]) for key, f in best.items()}
    # the recorded run's rows (results/metrics-model-inference.csv): concurrency 16 broke the budget everywhere
    assert seen == {"i2-d2000": (635.5, 8), "i2-d0": (546.5, 8), "i1-d2000": (326.6, 4), "i1-d0": (239.9, 4),
                    "default": (118.2, 1)}, seen


def test_without_a_space_the_knobs_are_those_the_configs_differ_in():
    choice, _ = ma_choice(FIXTURE)
    assert choice == Choice(instances=2, delay_us=2000)


@pytest.fixture
def export(tmp_path) -> Path:
    """A writable copy of the recorded export folder."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "export"))


def _rewrite(export: Path, edit) -> None:
    path = export / "results" / "metrics-model-inference.csv"
    rows = _fixture_rows(export)
    rows = edit(rows)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_knob_values_come_from_the_generated_config_not_the_name(export):
    repo = export / "output_model_repository"
    first, other = repo / "gpu_sim_config_3" / "config.pbtxt", repo / "gpu_sim_config_0" / "config.pbtxt"
    text = first.read_text()
    first.write_text(other.read_text())
    other.write_text(text)
    choice, _ = ma_choice(export, space=SearchSpace(instances=(1, 2), delays_us=(0, 2000)))
    assert choice == Choice(instances=1, delay_us=0)


def test_the_default_config_is_the_empty_choice_unless_the_space_leaves_it_out(export):
    _rewrite(export, lambda rows: sorted(rows, key=lambda r: not r["Model Config Path"].endswith("_default")))
    assert ma_choice(export)[0] == Choice()
    choice, figures = ma_choice(export, space=SearchSpace(include_default=False))
    assert choice == Choice(instances=2, delay_us=2000) and figures["measurements"] == 20


def test_nothing_meeting_the_constraint_gives_no_choice_and_the_best_failing_figures(export):
    _rewrite(export, lambda rows: [{**r, "Satisfies Constraints": "No"} for r in rows])
    choice, figures = ma_choice(export)
    assert choice is None and figures["satisfies"] is False and figures["variant"] == "gpu_sim_config_3"


def test_a_missing_table_says_the_profile_did_not_finish(tmp_path):
    with pytest.raises(FileNotFoundError, match="profile finish"):
        ma_choice(tmp_path)
