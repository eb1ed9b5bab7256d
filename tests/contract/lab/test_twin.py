"""The twin on a real tritonserver: it calibrates on the traffic the server serves, predicts for knobs before they
are applied, keeps the prediction with the change and measures it after; a sweep ranked by it measures only its top
configuration; `python -m app.experiments predict` prints JSON. Behaviour only: how right it is is
bench/twin_accuracy.py's."""
from __future__ import annotations

import json
import math
from dataclasses import replace

from app.config.edits import set_settings
from app.config.read import settings_of
from app.experiments.sweep.space import CONCURRENCY, SearchSpace
from app.experiments.sweep.sweeper import SweepOptions, run_sweep
from loadgen.spec import LoadSpec, Mode, TrafficClass
from tests.contract.cli.test_experiments import run_cli
from tests.helpers import wait_until

SPEC = LoadSpec(mode=Mode.OPEN, rate=120.0, model="gpu_sim", duration_s=None, classes=(TrafficClass(sla_ms=100.0),))


def test_it_learns_from_traffic_predicts_before_apply_and_measures_the_prediction_after(gpu_sim_lab):
    lab = gpu_sim_lab
    lab.start_traffic(SPEC)
    try:
        calibration = wait_until(lambda: lab.calibration("gpu_sim"), 40, "a calibration from the running traffic")
        assert calibration.instance_counts == (1,), calibration.instance_counts
        served = settings_of(lab.served_config("gpu_sim"))
        two = replace(served, instance_groups=(replace(served.instance_groups[0], count=2),))
        prediction = lab.predict("gpu_sim", two)
        for name in ("throughput_rps", "p50_ms", "p99_ms", "mean_batch"):
            got = getattr(prediction, name)
            assert got.low <= got.value <= got.high and all(map(math.isfinite, (got.low, got.high))), (name, got)
        assert prediction.confidence.split(":")[0] in ("high", "medium", "low"), prediction.confidence
        lab.apply("gpu_sim", set_settings(lab.served_config("gpu_sim"), two), "two instances")
        run_id = lab.note_prediction("gpu_sim", prediction)
        (waiting,) = lab.prediction_checks("gpu_sim")
        assert waiting.run_id == run_id and waiting.measured is None and waiting.change == "two instances"
        measured = wait_until(lambda: lab.prediction_checks("gpu_sim")[0].measured, 40,
                              "the window after the change to be measured")
        print("predicted", {k: prediction.__dict__[k].value for k in ("throughput_rps", "p99_ms")}, "measured",
              measured)
        assert measured["samples"] > 0 and measured["throughput_rps"] > 0 and measured["p99_ms"] > 0, measured
        assert lab.run(run_id).outcome["measured"] == measured  # stored, not only shown
    finally:
        lab.stop_traffic()


def test_a_sweep_ranked_by_the_twin_measures_only_its_top_configuration_and_its_ties(gpu_sim_lab):
    space = SearchSpace(model="gpu_sim", instances=(1, 2), loads=(2, 4), load_kind=CONCURRENCY, p99_budget_ms=200.0)
    result = run_sweep(gpu_sim_lab, space, label="twin-ranked",
                       options=SweepOptions(twin_top=1, window_s=0.5, max_windows=4, recheck_top=1))
    ranked = gpu_sim_lab.study(result.study_id).result["twin"]
    print(ranked, [p.key for p in result.points], result.skipped)
    assert result.status == "done" and len(ranked) >= 2, (result.status, result.note, ranked)
    measured = {p.choice.key for p in result.points}
    chosen = [r for r in ranked if r["measured"]]
    assert measured == {r["choice"] for r in chosen} and ranked[0] in chosen, (measured, ranked)
    # the top one, and at most one more: one the twin cannot tell from it (predicted within 10 %)
    assert len(chosen) <= 2 and all(r["predicted_goodput_rps"] >= 0.9 * ranked[0]["predicted_goodput_rps"]
                                    for r in chosen), ranked
    skipped = [s for s in result.skipped if "not measured — the twin ranks it #" in s]
    assert len(skipped) == len(ranked) - len(chosen), result.skipped
    assert all(" at concurrency " in s for s in skipped if "predicted inside" in s), result.skipped  # at which load
    assert result.best is not None and result.best.choice.key in measured  # the answer is a measured one
    # each configuration measured: where the measurements put it beside where the twin did
    assert all("measured_goodput_rps" in r for r in chosen if r["load"] is not None and any(
        p.choice.key == r["choice"] and space.holds(p.p99, p.throughput) for p in result.points)), ranked


def test_the_predict_command_probes_and_prints_each_combination_as_json(triton, tmp_path):
    env = {**triton.lab_env(), "TBL_STATE_DIR": str(tmp_path / "state")}
    done = run_cli(["predict", "--model", "gpu_sim", "--instances", "1,2", "--rate", "100", "--replications", "2",
                    "--probe-s", "1.5", "--duration-s", "8"], env, timeout_s=180)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [p["knobs"]["instance_count"] for p in out["predictions"]] == [1, 2], out["predictions"]
    assert all(p["prediction"]["p99_ms"]["low"] <= p["prediction"]["p99_ms"]["high"] for p in out["predictions"])
    assert out["calibration"]["instance_counts"] == [1] and "saturation_rps" in out["predictions"][-1]
