"""python -m app.experiments on real servers, judged by exit codes, JSON and the files left behind: a sweep on an
embedded copy of TBL_MODEL_REPOSITORY's folder (the folder itself never written), a bad model name refused before any
server starts, and studies on a server of the user's own (TRITON_URL) — an A/B of a model without config.pbtxt that
leaves none, a budget nothing meets (exit 1), configurations the model cannot take (exit 2, the reason said), a model
the server does not serve, and Ctrl-C ending a comparison with its starting config served again. Behaviour only:
whether a study finds what it should is bench/study_claims.py's."""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.config.model_config import parse_config
from app.paths import ROOT
from app.server.embedded import EmbeddedServer, ServerOptions, group_alive
from tests.third_party import copy_repository

DONE_OK, NOT_MET, FAILED = 0, 1, 2
QUICK_AB = ["--trial-s", "1", "--warmup-s", "0.5"]


def run_cli(argv: list[str], env: dict, timeout_s: float = 240.0) -> subprocess.CompletedProcess:
    """Run `python -m app.experiments argv` to its end; print what it said (shown when a test fails)."""
    done = subprocess.run([sys.executable, "-m", "app.experiments", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout_s)
    print(done.stdout, done.stderr)
    return done


def embedded_env(tmp_path: Path) -> dict:
    """Return an environment in which the CLI starts its own embedded server, its state under tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITON_", "TBL_MODEL_REPOSITORY"))}
    env["TBL_STATE_DIR"] = str(tmp_path / "state")
    return env


def instances(point: dict) -> int:
    """Return the instance count a point's config text serves (Triton's 1 where the text names no group)."""
    groups = parse_config(point["config_text"]).instance_group
    return groups[0].count if groups else 1


def test_a_sweep_on_an_embedded_copy_of_tbl_model_repository_writes_json_and_a_report(tmp_path):
    """text_len (a BYTES input, a config with a licence header) in the user's folder, named as the dashboard takes
    it: the embedded server serves a copy; the folder itself is never written."""
    repo = copy_repository(tmp_path / "their_repository")
    before = (repo / "text_len" / "config.pbtxt").read_bytes()
    out, report = tmp_path / "sweep.json", tmp_path / "sweep.html"
    done = run_cli(["sweep", "--model", "text_len", "--instances", "2", "--concurrency", "2", "--p99-ms", "1000",
                    "--grid", "--max-windows", "2", "--no-default", "--json", str(out), "--report", str(report)],
                   {**embedded_env(tmp_path), "TBL_MODEL_REPOSITORY": str(repo)})
    assert done.returncode == DONE_OK, done.stderr
    assert f"on an embedded tritonserver (a temporary copy of {repo.resolve()})" in done.stdout, done.stdout
    data = json.loads(out.read_text())
    (point,) = data["points"]
    assert data["status"] == "done" and data["exit_code"] == DONE_OK and data["space"]["instances"] == [2], data
    assert point["status"] == "done" and instances(point) == 2 and point["ok"] > 0 and point["failed"] == 0, point
    assert data["operating_point"] is not None and "Example Corp" in data["operating_point"]["config_text"]
    assert "operating point: " in done.stdout
    # the recommendation's sentence, on screen and in the JSON (the only configuration inside 1 s: nothing to weigh)
    assert data["recommendation"]["best"] == data["operating_point"]["key"], data["recommendation"]
    assert f"recommendation: {data['recommendation']['text']}" in done.stdout, done.stdout
    html = report.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "text_len" in html
    assert (repo / "text_len" / "config.pbtxt").read_bytes() == before, "the user's folder was written"


def test_a_model_that_is_not_in_tbl_model_repository_is_refused_before_any_server_starts(tmp_path):
    repo = copy_repository(tmp_path / "their_repository")
    started = time.monotonic()
    done = run_cli(["ab", "--model", "text_length", "--a", "serving", "--b", "instances=2", "--rate", "5"],
                   {**embedded_env(tmp_path), "TBL_MODEL_REPOSITORY": str(repo)}, timeout_s=60)
    assert done.returncode == FAILED and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.startswith("error: --model: model 'text_length' is not in the repository"), done.stderr
    assert "its models: fanout, onnx_plain, " in done.stderr and "text_len" in done.stderr, done.stderr
    assert not (tmp_path / "state").exists() and time.monotonic() - started < 30  # no server, no state: refused first


@pytest.fixture(scope="module")
def their_server(tmp_path_factory):
    """A server of the user's own on a copy of the third-party repository, reached by TRITON_URL."""
    base = tmp_path_factory.mktemp("their-server")
    repo = copy_repository(base / "repo")
    server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None, metrics_port=None,
                                          log_dir=base))
    endpoint = server.start()
    pgid = server.proc.pid
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(TRITON_URL=endpoint.http_url, TRITON_GRPC_URL=endpoint.grpc_url, TRITON_METRICS_URL=endpoint.metrics_url,
               TRITON_CONTROL_KEY=endpoint.control_key or "", TRITON_MODEL_REPOSITORY=str(repo),
               TBL_STATE_DIR=str(base / "state"))
    yield repo, env
    server.stop()
    if group_alive(pgid):  # pragma: no cover - stop() failed to clean up
        os.killpg(pgid, signal.SIGKILL)


def test_an_ab_on_their_server_of_a_model_without_config_pbtxt(their_server, tmp_path):
    repo, env = their_server
    out = tmp_path / "ab.json"
    done = run_cli(["ab", "--model", "py_auto", "--a", "serving", "--b", "delay_us=2000", "--rate", "40",
                    "--trials", "2", *QUICK_AB, "--json", str(out)], env)
    assert done.returncode == DONE_OK, done.stderr
    data = json.loads(out.read_text())
    assert data["status"] == "done" and data["server"] == f"the server at {env['TRITON_URL']}", data["server"]
    a, b = data["arms"]
    assert a["name"].startswith("A (") and a["name"].endswith(" (serving))") and a["changes"] == [], a["name"]
    assert b["changes"][-1].endswith("→ 2000 µs"), b["changes"]
    assert all(len([v for v in arm["trials"]["throughput_rps"] if v]) == 2 for arm in (a, b)), data["arms"]
    assert set(data["verdicts"]) == {b["name"]} and data["recommendation"]["arm"] in (a["name"], b["name"])
    assert not (repo / "py_auto" / "config.pbtxt").exists(), "the comparison left a config.pbtxt behind"


def test_a_budget_no_configuration_meets_exits_1(their_server, tmp_path):
    repo, env = their_server
    out = tmp_path / "sweep.json"
    done = run_cli(["sweep", "--model", "py_auto", "--concurrency", "2", "--p99-ms", "0.001", "--max-windows", "2",
                    "--json", str(out)], env)
    assert done.returncode == NOT_MET, done.stderr
    data = json.loads(out.read_text())
    assert data["status"] == "done" and data["operating_point"] is None and data["exit_code"] == NOT_MET, data
    point, = data["points"]  # the config serving at the start, once
    assert point["status"] == "done" and point["ok"] > 0 and not point["within_sla"] and point["sla"] == "over", point
    assert "no configuration kept p99 within 0.001 ms" in done.stdout


def test_a_sweep_whose_configurations_the_model_cannot_take_fails_with_the_reason(their_server, tmp_path):
    """two_inputs cannot batch (max_batch_size 0): no queue delay applies, the sweep fails and says why on stderr."""
    repo, env = their_server
    before = (repo / "two_inputs" / "config.pbtxt").read_bytes()
    out = tmp_path / "sweep.json"
    done = run_cli(["sweep", "--model", "two_inputs", "--delay-us", "0,2000", "--concurrency", "1", "--p99-ms", "1000",
                    "--json", str(out)], env)
    assert done.returncode == FAILED and "error: the sweep ended failed" in done.stderr, done.stderr
    assert "needs max_batch_size > 0" in done.stderr, done.stderr
    data = json.loads(out.read_text())
    assert data["status"] == "failed" and data["operating_point"] is None and data["exit_code"] == FAILED, data
    assert data["points"] and all(p["status"] == "failed" for p in data["points"]), data["points"]
    assert (repo / "two_inputs" / "config.pbtxt").read_bytes() == before


def test_a_model_the_server_does_not_serve_exits_2_naming_those_it_does(their_server, tmp_path):
    _, env = their_server
    done = run_cli(["sweep", "--model", "nope", "--concurrency", "2", "--p99-ms", "10"], env, timeout_s=60)
    assert done.returncode == FAILED and "nope" in done.stderr, done.stderr
    assert "models that serve: " in done.stderr and "py_auto" in done.stderr, done.stderr


def test_ctrl_c_ends_the_study_serving_its_start_again_and_exits_2(their_server, tmp_path):
    """A's delay is not what serves: the first trial reloads py_auto (writing a config.pbtxt it never had); stopped
    during that trial, the CLI serves the start again (no file) before it exits."""
    repo, env = their_server
    argv = ["ab", "--model", "py_auto", "--a", "delay_us=3000", "--b", "delay_us=6000", "--rate", "20", "--trials", "2",
            "--trial-s", "60"]
    proc = subprocess.Popen([sys.executable, "-m", "app.experiments", *argv],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        said = wait_for_line(proc, "measuring trial 1 of 2: A", 60)
        proc.send_signal(signal.SIGINT)
        out, err = (text.decode() for text in proc.communicate(timeout=60))
    finally:
        if proc.poll() is None:
            proc.kill()
    print(said + out, err)
    assert proc.returncode == FAILED, err
    assert "error: the ab ended cancelled" in err, err
    assert not (repo / "py_auto" / "config.pbtxt").exists(), "the cancelled comparison left a config.pbtxt behind"


def wait_for_line(proc: subprocess.Popen, text: str, timeout_s: float) -> str:
    """Return what proc printed up to and including the first line containing text; fail after timeout_s."""
    seen, deadline = "", time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 0.25)
        if ready:  # read the pipe itself: a buffered reader would hold lines select cannot see
            seen += os.read(proc.stdout.fileno(), 65536).decode()
            if text in seen:
                return seen
    pytest.fail(f"the CLI never printed {text!r} (exit {proc.poll()}): {seen}")
