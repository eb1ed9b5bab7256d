"""python -m app.scenarios on the real server: it lists every scenario, and runs the cheapest one headless to its end,
storing it as a study with a run per phase and giving back the starting config — whether its claim held is
`python -m app.scenarios run --all`'s to judge, not this test's."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from app.paths import ROOT
from app.scenarios.claims import SCENARIOS
from app.store.database import ExperimentStore

CHEAPEST = "instances-x-batching"  # two phases of 4 s on gpu_sim


def test_the_cli_lists_them_and_runs_one_to_its_end_storing_its_study(triton, restore_model, tmp_path):
    scenario = SCENARIOS[CHEAPEST]
    restore_model(scenario.model)
    config = triton.repo / scenario.model / "config.pbtxt"
    before = config.read_bytes()
    env = {**os.environ, **triton.lab_env(TBL_STATE_DIR=str(tmp_path / "state"))}
    listed = subprocess.run([sys.executable, "-m", "app.scenarios", "list"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=60, check=True).stdout
    assert all(name in listed for name in SCENARIOS), listed
    out = tmp_path / "scenario.json"
    run = subprocess.run([sys.executable, "-m", "app.scenarios", "run", CHEAPEST, "--json", str(out)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=240, check=False)
    print(run.stdout[-3000:], run.stderr[-3000:])
    assert run.returncode in (0, 1), run.stderr[-2000:]  # 2: it could not run to the end
    data = json.loads(out.read_text())
    assert data["scenario"] == CHEAPEST and data["status"] == "done" and data["checks"], data
    assert set(data["phases"]) == {p.name for p in scenario.phases(False)}, list(data["phases"])
    assert f"{CHEAPEST}: {'passed' if data['passed'] else 'failed'} in " in run.stdout
    store = ExperimentStore(tmp_path / "state" / "experiments.sqlite")
    study = store.study(data["study_id"])
    assert study.kind == "scenario" and study.status == "done", (study.kind, study.status, study.note)
    assert sorted(r.point for r in store.runs(study_id=study.id)) == sorted(data["phases"])
    assert config.read_bytes() == before, "the starting config is gone"
