"""Every guided scenario runs headless on the real server and its claim holds (shortened phases, as in CI)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from app.config.model_config import parse_config
from app.paths import ROOT
from app.scenarios.catalog import SCENARIOS
from app.scenarios.runner import run_scenario


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_scenario_reproduces_its_claim(name, gpu_sim_lab, restore_model):
    restore_model("stream_acc")
    scenario = SCENARIOS[name]
    before = parse_config(gpu_sim_lab.config.current_text(scenario.model))
    result = run_scenario(gpu_sim_lab, scenario)
    for check in result.checks:
        print("PASS" if check.ok else "FAIL", check.claim, "—", check.measured, "— held to", check.margin)
    assert result.status == "done", result.note
    assert result.passed, [c for c in result.checks if not c.ok]
    assert set(result.figures) == {p.name for p in scenario.phases(False)}
    study = gpu_sim_lab.experiments.study(result.study_id)  # stored as an experiment, with one run per phase
    assert study.kind == "scenario" and study.result["passed"]
    assert len(gpu_sim_lab.experiments.list(study_id=result.study_id)) == len(result.figures)
    assert parse_config(gpu_sim_lab.config.current_text(scenario.model)) == before, "the starting config is gone"


def test_the_cli_lists_them_and_runs_one_headless_with_json(triton, restore_model, tmp_path):
    restore_model("stream_acc")
    env = {**os.environ, "TRITON_URL": triton.url, "TRITON_GRPC_URL": triton.endpoint.grpc_url,
           "TRITON_METRICS_URL": triton.endpoint.metrics_url, "TRITON_MODEL_REPOSITORY": str(triton.repo),
           "TBL_STATE_DIR": str(tmp_path / "state")}
    listed = subprocess.run([sys.executable, "-m", "app.scenarios", "list"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=60, check=True).stdout
    assert all(name in listed for name in SCENARIOS)
    out = tmp_path / "stateful.json"
    run = subprocess.run([sys.executable, "-m", "app.scenarios", "run", "stateful", "--json", str(out)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=240, check=False)
    print(run.stdout[-3000:], run.stderr[-3000:])
    assert run.returncode == 0, run.stdout[-2000:]
    data = json.loads(out.read_text())
    assert data["passed"] and data["scenario"] == "stateful" and len(data["phases"]) == 3
    assert data["phases"]["dynamic batching"]["client"]["sequences"]["wrong_output"] > 0
