"""Every guided scenario runs headless on the real server and its claim holds (shortened phases, as in CI)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from app.config.model_config import parse_config
from app.paths import ROOT
from app.store.database import Experiment
from app.scenarios.base import PhaseFigures
from app.scenarios.catalog import SCENARIOS, operating_point
from app.scenarios.runner import caution, phase_table, run_scenario
from app.timeline.figures import Figures
from app.timeline.sides import client_rows


CLI_SCENARIO = "stateful"  # its claim is checked through the CLI below (one run of it, not two: ~17 s of CI)


@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - {CLI_SCENARIO}))
def test_the_scenario_reproduces_its_claim(name, gpu_sim_lab, restore_model):
    scenario = SCENARIOS[name]
    restore_model(scenario.model)
    before = parse_config(gpu_sim_lab.config.current_text(scenario.model))
    result = run_scenario(gpu_sim_lab, scenario)
    for check in result.checks:
        print("PASS" if check.ok else "FAIL", check.claim, "—", check.measured, "— held to", check.margin)
    print(result.caution() or "the load generator kept its schedule in every phase")
    assert result.status == "done", result.note
    assert result.passed, [c for c in result.checks if not c.ok]
    assert set(result.figures) == {p.name for p in scenario.phases(False)}
    study = gpu_sim_lab.experiments.study(result.study_id)  # stored as an experiment, with one run per phase
    assert study.kind == "scenario" and study.result["passed"]
    assert len(gpu_sim_lab.runs(study_id=result.study_id)) == len(result.figures)
    assert parse_config(gpu_sim_lab.config.current_text(scenario.model)) == before, "the starting config is gone"


def test_the_cli_lists_them_and_runs_one_headless_with_json(triton, restore_model, tmp_path):
    restore_model("stream_acc")
    config = triton.repo / "stream_acc" / "config.pbtxt"
    before = config.read_bytes()
    env = {**os.environ, "TRITON_URL": triton.url, "TRITON_GRPC_URL": triton.endpoint.grpc_url,
           "TRITON_CONTROL_KEY": triton.endpoint.control_key,
           "TRITON_METRICS_URL": triton.endpoint.metrics_url, "TRITON_MODEL_REPOSITORY": str(triton.repo),
           "TBL_STATE_DIR": str(tmp_path / "state")}
    listed = subprocess.run([sys.executable, "-m", "app.scenarios", "list"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=60, check=True).stdout
    assert all(name in listed for name in SCENARIOS)
    out = tmp_path / "stateful.json"
    run = subprocess.run([sys.executable, "-m", "app.scenarios", "run", CLI_SCENARIO, "--json", str(out)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=240, check=False)
    print(run.stdout[-3000:], run.stderr[-3000:])
    assert run.returncode == 0, run.stdout[-2000:]
    data = json.loads(out.read_text())
    assert data["passed"] and data["scenario"] == CLI_SCENARIO, data.get("checks")
    assert set(data["phases"]) == {p.name for p in SCENARIOS[CLI_SCENARIO].phases(False)}, list(data["phases"])
    assert data["phases"]["dynamic batching"]["client"]["sequences"]["wrong_output"] > 0
    assert config.read_bytes() == before, "the starting config is gone"


def test_the_operating_point_follows_the_chapters_worked_example():
    # 5.12: instances 2/4/8 gave (1000/s, 20 ms), (1800/s, 28 ms), (1900/s, 55 ms); with p99 < 30 ms the answer is 4.
    figures = {f"{n} instances": PhaseFigures(client=client_rows({"all": {"throughput_rps": rps, "p99_ms": p99}}))
               for n, rps, p99 in ((2, 1000, 20), (4, 1800, 28), (8, 1900, 55))}
    assert operating_point(figures, 30.0) == "4 instances"
    assert operating_point(figures, 60.0) == "8 instances"
    assert operating_point(figures, 10.0) is None


def test_a_phase_table_row_per_phase_and_class_with_the_diagnosis_where_there_was_one():
    one_class = Experiment("a", "gpu_sim", "", client={"all": {"throughput_rps": 10.0, "p99_ms": 5.0}},
                           server={"avg_batch": 2.0, "queue_us": 1500.0}, point="A: sick",
                           outcome={"diagnosed": True, "findings": [{"pattern": "A"}], "fix": ""})
    two_classes = Experiment("b", "gpu_sim", "", client={"all": {}, "interactive": {"p99_ms": 1.0},
                                                          "batch": {"p99_ms": 9.0}}, point="mixed", outcome={})
    rows = phase_table([one_class, two_classes])
    assert [(r["phase"], r["class"]) for r in rows] == [("A: sick", ""), ("mixed", "interactive"),
                                                            ("mixed", "batch")]
    assert rows[0]["diagnosis"] == "A" and rows[0]["queue (ms)"] == "1.50" and rows[1]["diagnosis"] == ""
    assert rows[0]["p99 (ms)"] == "5.00" and rows[0]["goodput (req/s)"] == "—", rows[0]  # not measured: a dash


def test_a_phase_in_which_the_generator_fell_behind_is_named():
    """The same rule as the live warning (loadgen.behind): over 5 % of a phase's requests sent over 10 ms late."""
    on_time = {"all": {"requests": 400, "late": 48, "behind": 12, "throughput_rps": 40.0}}  # 3 % over 10 ms
    slipped = {"all": {"requests": 400, "late": 80, "behind": 60, "throughput_rps": 40.0}}  # 15 %
    streamed = {"all": {"tokens_per_s": 900.0, "failures": 0}}  # generations: no schedule to fall behind
    runs = [Experiment(name, "gpu_sim", "", client=client, point=name, outcome={})
            for name, client in (("calm", on_time), ("storm", slipped), ("tokens", streamed))]
    rows = phase_table(runs)
    assert [r.get("generator behind") for r in rows] == ["", "15% sent over 10 ms late", ""]
    note = caution({r.point: r.window() for r in runs})
    assert note.startswith("The load generator fell behind its schedule in 1 of 3 phases (more than 5% of requests "
                           "sent over 10 ms late — storm: 15% sent over 10 ms late)"), note
    assert caution({"calm": runs[0].window(), "tokens": runs[2].window()}) == ""


def test_a_scenario_and_a_sweep_name_the_same_operating_point_by_one_rule():
    """Goodput first (answers inside their SLA), throughput only breaking ties — the sweep's rule, not a second one."""
    from app.experiments.sweep.recommend import operating_point as sweep_point  # noqa: PLC0415
    from app.experiments.sweep.space import Choice, SearchSpace  # noqa: PLC0415
    from app.experiments.sweep.points import Point  # noqa: PLC0415

    rows = {"fast but late": (1900.0, 1500.0, 25.0), "slower, in time": (1800.0, 1700.0, 28.0),
            "over budget": (2500.0, 2400.0, 45.0)}
    figures = {name: PhaseFigures(client=client_rows({"all": {"throughput_rps": rps, "goodput_rps": good,
                                                               "p99_ms": p99}}))
               for name, (rps, good, p99) in rows.items()}
    space = SearchSpace("m", instances=(1, 2, 3), loads=(8.0,), p99_budget_ms=30.0)
    points = [Point(Choice(instances=i + 1), 8.0, figures=Figures.from_dict({"client": {"all": {
                  "throughput_rps": rps, "goodput_rps": good, "p99_ms": p99}}}))
              for i, (rps, good, p99) in enumerate(rows.values())]
    picked = sweep_point(space, points)
    assert operating_point(figures, 30.0) == "slower, in time", figures
    assert picked is points[1], [(p.choice, p.goodput) for p in points]
