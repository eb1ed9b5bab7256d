"""The GPU evidence capture, rehearsed on this CPU machine: it must work the first time it runs on a GPU one.

A GPU machine is lent to few tasks and for minutes, so the script is run here on the real wheel server: the
`--cpu` rehearsal takes every step on the default configs, and without `--cpu` the GPU configs must fail to
load here with a clear summary and exit status 2 (what a machine without a usable GPU gets).
"""
from __future__ import annotations

import json
import subprocess
import sys

from app.metrics.scrape import parse_metrics
from app.paths import ROOT

SCRIPT = ROOT / "scripts" / "capture_gpu_evidence.py"
FILES = {"metrics_idle.prom", "metrics_1_instance.prom", "metrics_2_instances.prom", "configs.json", "summary.json"}


def _run(out, *args: str) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, str(SCRIPT), str(out), *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=240, check=False)
    print(run.stdout[-3000:], run.stderr[-3000:])
    return run


def test_the_cpu_rehearsal_takes_every_step_and_writes_what_the_device_tool_can_bring_back(tmp_path):
    out = tmp_path / "evidence"
    run = _run(out, "--cpu")
    assert run.returncode == 0
    files = {p.name for p in out.iterdir()}
    assert files == FILES and len(files) < 8, files  # the device tool brings back 8 files; device.log is one more
    summary = json.loads((out / "summary.json").read_text())
    assert summary["loaded"]["gpu_sim"] == "READY" and summary["loaded"]["stream_acc"] == "READY"
    assert summary["instances_served"] == {"1": [1], "2": [2]}, summary["instances_served"]
    assert summary["gpus"] == [] and summary["server_log_tail"]
    configs = json.loads((out / "configs.json").read_text())
    assert configs["gpu_sim"]["instance_group"][0]["kind"] == "KIND_CPU"
    assert {m["name"] for m in configs["repository index"]} >= {"gpu_sim", "stream_acc", "token_sim", "mlp"}
    answered = [parse_metrics((out / f).read_text(), 0.0).models["gpu_sim"].counters["nv_inference_request_success"]
                for f in ("metrics_idle.prom", "metrics_1_instance.prom", "metrics_2_instances.prom")]
    assert answered == [0, 200, 400], answered  # 200 answers at each instance count, counters kept over the reload


def test_without_a_gpu_the_gpu_configs_fail_to_load_and_it_says_so(tmp_path):
    out = tmp_path / "evidence"
    run = _run(out)
    assert run.returncode == 2
    assert "no usable GPU here" in run.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["gpus"] == [] and summary["configs"] == "configs/gpu.pbtxt" and summary["error"], summary
