"""python -m loadgen run against the real server: a text summary, its JSON and every record written; an open loop
from flags; the module's entry point, and the load generator importing without Streamlit. Flags and refusals:
tests/unit/loadgen/test_cli.py."""
from __future__ import annotations

import json
import subprocess
import sys

from loadgen.cli import main
from tests.loadgen_data import CLI_SPEC


def test_run_prints_a_summary_and_writes_json(triton, tmp_path, capsys):
    out = tmp_path / "out.json"
    spec = tmp_path / "s.yaml"
    spec.write_text(CLI_SPEC)
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


def test_module_entry_point_and_no_streamlit():
    code = "import sys, loadgen.controller, loadgen.cli; assert 'streamlit' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    help_text = subprocess.run([sys.executable, "-m", "loadgen", "run", "--help"], capture_output=True, text=True)
    assert help_text.returncode == 0 and "--concurrency" in help_text.stdout
