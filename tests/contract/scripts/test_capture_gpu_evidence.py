"""The GPU evidence capture, rehearsed on this CPU machine: it must work the first time it runs on a GPU one.

A GPU machine is lent to few tasks and for minutes, so the script is run here on the real wheel server: the
`--cpu` rehearsal takes every step on the default configs, and without `--cpu` the GPU configs must fail to
load here with a clear summary and exit status 2 (what a machine without a usable GPU gets).
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

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
    logs = {f for f in files if f.startswith("tritonserver-") and f.endswith(".log")}
    assert files - logs == FILES and len(logs) == 1, files  # 6 files: the device tool brings back 8 (+ device.log)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["loaded"]["gpu_sim"] == "READY" and summary["loaded"]["stream_acc"] == "READY"
    assert summary["instances_served"] == {"1": [["KIND_CPU", 1, []]], "2": [["KIND_CPU", 2, []]]}, summary
    assert summary["answered"] == {"1": 200, "2": 400}, summary["answered"]  # counters kept over the reload
    assert summary["gpus"] == [] and summary["gpu_memory_used_total"] == {"1": None, "2": None}
    assert summary["memory_per_instance_bytes"] is None and "error" not in summary and summary["server_log_tail"]
    configs = json.loads((out / "configs.json").read_text())
    assert configs["gpu_sim"]["instance_group"][0]["kind"] == "KIND_CPU"
    assert {m["name"] for m in configs["repository index"]} >= {"gpu_sim", "stream_acc", "token_sim", "mlp"}
    answered = [parse_metrics((out / f).read_text(), 0.0).models["gpu_sim"].counters["nv_inference_request_success"]
                for f in ("metrics_idle.prom", "metrics_1_instance.prom", "metrics_2_instances.prom")]
    assert answered == [0, 200, 400], answered


def test_without_a_gpu_the_gpu_configs_fail_to_load_and_it_says_why(tmp_path):
    out = tmp_path / "evidence"
    run = _run(out)
    assert run.returncode == 2
    assert "did not start with configs/gpu.pbtxt" in run.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["gpus"] == [] and summary["configs"] == "configs/gpu.pbtxt", summary
    assert "unsupported gpu id 0" in summary["error"], summary["error"][-2000:]  # Triton's own words, kept whole
    assert any(p.name.startswith("tritonserver-") for p in out.iterdir())  # and its whole log


def test_a_run_stopped_by_sigterm_saves_what_it_saw_and_stops_its_server(tmp_path):
    """The device script bounds the capture with `timeout`: what was seen must survive, no server may stay."""
    out = tmp_path / "evidence"
    proc = subprocess.Popen([sys.executable, "-u", str(SCRIPT), str(out), "--cpu"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        for line in proc.stdout:  # stop it once the server is up and a model is loaded
            seen.append(line)
            if line.startswith("gpu_sim: READY"):
                proc.send_signal(signal.SIGTERM)
                break
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    print("".join(seen), rest)
    assert proc.returncode == 1
    summary = json.loads((out / "summary.json").read_text())
    assert "stopped by SIGTERM" in summary["error"] and summary["loaded"]["gpu_sim"] == "READY", summary
    log = next(out.glob("tritonserver-*.log"))
    port = log.stem.split("-")[1]
    assert not any(b"tritonserver" in cmd and f"--http-port={port}".encode() in cmd
                   for cmd in map(_read, Path("/proc").glob("[0-9]*/cmdline"))), "the server outlived the capture"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process ended while we looked
        return b""
