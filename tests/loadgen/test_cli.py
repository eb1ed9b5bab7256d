"""python -m loadgen run: flags, spec files, text and JSON summaries."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from loadgen.cli import main, parser, spec_from_args
from loadgen.spec import ArrivalKind, Mode, RetryKind

SPEC = """
mode: closed
concurrency: 3
classes:
  - {name: fast, share: 1, priority: 0, sla_ms: 50}
  - {name: probe, rate: 20, arrival: {kind: constant}}
sequences:
  - {count: 2, length: {kind: fixed, n: 4}}
"""


def args(*argv):
    return parser().parse_args(["run", "--url", "http://h:1", *argv])


def test_flags_build_the_spec(tmp_path):
    spec = spec_from_args(args("--rate", "50", "--arrival", "bursty", "-p", "on_s=0.25", "--duration", "3",
                               "--retry", "backoff", "--timeout-ms", "20", "--shape", "-1", "--lengths", "4:9"))
    assert spec.mode is Mode.OPEN and spec.rate == 50 and spec.arrival.kind is ArrivalKind.BURSTY
    assert spec.arrival.on_s == 0.25 and spec.duration_s == 3
    cls = spec.classes[0]
    assert cls.retry.kind is RetryKind.BACKOFF and cls.timeout_ms == 20 and cls.shape.lengths() == list(range(4, 10))
    steps = spec_from_args(args("--rate", "10", "--arrival", "step", "-p", "steps=1:1,2:0.5"))
    assert steps.arrival.steps == ((1.0, 1.0), (2.0, 0.5))
    path = tmp_path / "s.yaml"
    path.write_text(SPEC)
    from_file = spec_from_args(args("--spec", str(path), "--concurrency", "5"))
    assert from_file.concurrency == 5 and [c.name for c in from_file.classes] == ["fast", "probe"]


def test_run_prints_a_summary_and_writes_json(triton, tmp_path, capsys):
    out = tmp_path / "out.json"
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    records = tmp_path / "records.jsonl"
    code = main(["run", "--url", triton.url, "--model", "gpu_sim", "--spec", str(spec), "--duration", "1.5",
                 "--json", str(out), "--records", str(records)])
    assert code == 0
    text = capsys.readouterr().out
    assert "Throughput:" in text and "p99 latency:" in text and "class probe" in text
    summary = json.loads(out.read_text())
    assert summary["throughput_rps"] > 0 and set(summary["latency_us"]) >= {"p50", "p90", "p95", "p99"}
    assert set(summary["requests"]) >= {"sent", "ok", "failed", "late"}
    assert set(summary["classes"]) == {"fast", "probe", "sequences"}
    assert summary["classes"]["sequences"]["requests"]["failed"] == {}
    lines = records.read_text().splitlines()
    assert len(lines) == summary["requests"]["sent"] and json.loads(lines[0])["outcome"] in ("ok",)


def test_open_loop_from_flags(triton, tmp_path):
    out = tmp_path / "o.json"
    assert main(["run", "--url", triton.url, "--model", "gpu_sim", "--rate", "100", "--arrival", "poisson",
                 "--duration", "1", "--json", str(out), "--quiet"]) == 0
    summary = json.loads(out.read_text())
    assert 50 < summary["requests"]["sent"] < 160 and summary["spec"]["mode"] == "open"


@pytest.mark.parametrize("argv", [["--rate", "5", "-p", "nonsense"], ["--concurrency", "2", "--spec", "/nope.yaml"]])
def test_bad_input_exits_with_a_message(argv, capsys):
    assert main(["run", "--url", "http://127.0.0.1:9", "--duration", "1", *argv]) == 2
    assert capsys.readouterr().err.startswith("error:")


def test_module_entry_point_and_no_streamlit():
    code = "import sys, loadgen.controller, loadgen.cli; assert 'streamlit' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    help_text = subprocess.run([sys.executable, "-m", "loadgen", "run", "--help"], capture_output=True, text=True)
    assert help_text.returncode == 0 and "--concurrency" in help_text.stdout
