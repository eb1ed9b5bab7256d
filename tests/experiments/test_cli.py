"""python -m app.experiments: its arguments (pure), and sweeps and A/B comparisons run headless on the real server —
gpu_sim on the embedded server the CLI starts, models the lab did not write on an embedded copy of their repository
and on a server of their own (TRITON_URL) — checked by their JSON and exit codes."""
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
from app.cli import experiments as cli
from app.paths import ROOT
from app.server.embedded import EmbeddedServer, ServerOptions, group_alive
from tests.third_party import copy_repository

DONE_OK, NOT_MET, FAILED = 0, 1, 2
QUICK_SWEEP = ["--grid", "--max-windows", "3", "--no-default"]
QUICK_AB = ["--trial-s", "1", "--warmup-s", "0.5"]


def run_cli(argv: list[str], env: dict, timeout_s: float = 240.0) -> subprocess.CompletedProcess:
    """Run `python -m app.experiments argv` to its end; print what it said (shown when a test fails)."""
    done = subprocess.run([sys.executable, "-m", "app.experiments", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout_s)
    print(done.stdout, done.stderr)
    return done


def embedded_env(tmp_path: Path) -> dict:
    """Return an environment in which the CLI starts its own embedded server, its state under tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env["TBL_STATE_DIR"] = str(tmp_path / "state")
    return env


def instances(point: dict) -> int:
    """Return the instance count a point's config text serves (Triton's 1 where the text names no group)."""
    groups = parse_config(point["config_text"]).instance_group
    return groups[0].count if groups else 1


def delay_us(point: dict) -> int:
    """Return the queue delay a point's config text serves."""
    return parse_config(point["config_text"]).dynamic_batching.max_queue_delay_microseconds


# --- arguments, before any server ---------------------------------------------------------------------------------
@pytest.fixture
def no_server(monkeypatch):
    """Fail the test if the CLI starts a lab: a refusal must come first."""
    def refuse(*_a, **_k):
        raise AssertionError("a server was started before the arguments were checked")
    monkeypatch.setattr("app.lab.root.Lab.create", refuse)
    monkeypatch.delenv("TRITON_URL", raising=False)


def test_a_sweep_and_an_ab_read_their_arguments():
    args = cli.parser().parse_args(["sweep", "--model", "m", "--instances", "1, 2", "--delay-us", "0,2000",
                                    "--preferred", "4,8;8,16", "--rate", "50,100", "--p99-ms", "20",
                                    "--json", "o.json"])
    assert (args.instances, args.delay_us, args.preferred, args.rate, args.concurrency, args.p99_ms) == (
        (1, 2), (0, 2000), ((4, 8), (8, 16)), (50.0, 100.0), None, 20.0)
    assert args.json == Path("o.json") and args.max_batch_size == () and not args.grid
    ab = cli.parser().parse_args(["ab", "--model", "m", "--a", "delay_us=0", "--b", "delay_us=5000",
                                  "--c", "@other.pbtxt", "--concurrency", "8", "--trials", "6", "--require-difference"])
    assert (ab.a, ab.b, ab.c, ab.d, ab.concurrency, ab.rate, ab.trials) == (
        "delay_us=0", "delay_us=5000", "@other.pbtxt", None, 8, None, 6)
    assert ab.require_difference and (ab.trial_s, ab.warmup_s, ab.sla_ms, ab.seed) == (5.0, 1.0, 50.0, 1)


@pytest.mark.parametrize("argv, words", [
    (["sweep", "--model", "m", "--concurrency", "1,x", "--p99-ms", "20"], "'1,x' is not a comma-separated list"),
    (["sweep", "--model", "m", "--concurrency", "1", "--rate", "5", "--p99-ms", "20"], "not allowed with argument"),
    (["sweep", "--model", "m", "--concurrency", "1"], "the following arguments are required: --p99-ms"),
    (["ab", "--model", "m", "--a", "serving", "--rate", "5"], "the following arguments are required: --b"),
])
def test_a_malformed_command_line_exits_2_with_the_usage(argv, words, capsys, no_server):
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == FAILED and words in err and "usage:" in err, err


@pytest.mark.parametrize("argv, words", [
    (["ab", "--model", "m", "--a", "serving", "--b", "delay=5", "--rate", "5"], "--b: unknown knob 'delay'"),
    (["ab", "--model", "m", "--a", "instances=0", "--b", "serving", "--rate", "5"], "--a: instances='0' must be"),
    (["ab", "--model", "m", "--a", "serving", "--b", "@/nonexistent/config.pbtxt", "--rate", "5"],
     "--b @/nonexistent/config.pbtxt: cannot read that config.pbtxt"),
    (["ab", "--model", "m", "--a", "serving", "--b", "instances=2", "--rate", "5", "--trials", "1"],
     "at least two trials"),
    (["ab", "--model", "m", "--a", "serving", "--b", "instances=2", "--rate", "9000"], "rate (req/s) must be"),
    (["sweep", "--model", "m", "--concurrency", "1,1000", "--p99-ms", "20"], "concurrency must be between 1 and 256"),
    (["sweep", "--model", "m", "--concurrency", "1", "--p99-ms", "0"], "the p99 budget must be above 0 ms"),
    (["sweep", "--model", "m", "--concurrency", "1", "--p99-ms", "5", "--window-s", "0"], "window_s must be"),
    (["sweep", "--model", "m", "--concurrency", "1", "--p99-ms", "5", "--model-repository", "/nonexistent/repo"],
     "--model-repository /nonexistent/repo: no such folder"),
])
def test_a_refused_study_exits_2_before_any_server_starts(argv, words, capsys, no_server):
    assert cli.main(argv) == FAILED
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err, err


def test_arms_from_knobs_and_from_a_config_file_over_what_serves(tmp_path):
    """The arms' names say what each changes from the serving config; an @FILE is taken as written."""
    from types import SimpleNamespace

    from tests.experiments.test_arms import SERVED, USER_FILE

    pasted = tmp_path / "b.pbtxt"
    pasted.write_text(USER_FILE.replace("max_queue_delay_microseconds: 500", "max_queue_delay_microseconds: 2000"))
    lab = SimpleNamespace(config=SimpleNamespace(live=lambda model: SERVED, file_text=lambda model: USER_FILE))
    typed = [(letter, value, cli._arm_text(value, letter.lower()))
             for letter, value in (("A", "serving"), ("B", f"@{pasted}"), ("C", "instances=2"))]
    arms, defined = cli._define_arms(lab, "ranker", typed)
    assert [a.name for a in arms] == ["A (1 instance, max batch 16, delay 500 µs, preferred [4, 8] (serving))",
                                      "B (pasted: delay 500 → 2000 µs)", "C (instances 1 → 2)"], arms
    assert arms[0].config_text == USER_FILE and arms[1].config_text == pasted.read_text()
    assert "count: 2" in arms[2].config_text and "# tuned last spring" in arms[2].config_text
    assert [d.changes for d in defined] == [(), ("delay 500 → 2000 µs",), ("instances 1 → 2",)]
    with pytest.raises(ValueError, match="--b: preferred sizes \\[32\\] are above max_batch_size 16"):
        cli._define_arms(lab, "ranker", [("B", "preferred=32", "preferred=32")])


def test_a_repository_folder_is_for_the_embedded_server_only(capsys, no_server, monkeypatch):
    monkeypatch.setenv("TRITON_URL", "http://127.0.0.1:9")
    argv = ["sweep", "--model", "m", "--concurrency", "1", "--p99-ms", "5", "--model-repository", str(ROOT)]
    assert cli.main(argv) == FAILED
    assert "with TRITON_URL set, name the server's folder with TRITON_MODEL_REPOSITORY" in capsys.readouterr().err


def test_the_embedded_server_gets_a_temporary_copy_with_large_files_linked(tmp_path, monkeypatch):
    """Configs are copied (a study writes them), weights linked (never written, maybe gigabytes); the copy and its
    state folder go when the run ends."""
    import app.cli.headless as headless

    repo = tmp_path / "theirs"
    (repo / "m" / "1").mkdir(parents=True)
    (repo / "m" / "config.pbtxt").write_text('name: "m"\n')
    (repo / "m" / "1" / "model.onnx").write_bytes(b"w" * 2048)
    monkeypatch.setattr(headless, "LINK_ABOVE_BYTES", 1024)
    monkeypatch.delenv("TRITON_URL", raising=False)
    monkeypatch.delenv("TBL_STATE_DIR", raising=False)
    seen = {}

    def create(env):
        copy = Path(env["TBL_MODEL_REPOSITORY"])
        seen.update(copy=copy, state=os.environ.get("TBL_STATE_DIR"),
                    config_linked=(copy / "m/config.pbtxt").is_symlink(), weights=os.readlink(copy / "m/1/model.onnx"))
        raise RuntimeError("stop here")
    monkeypatch.setattr("app.lab.root.Lab.create", create)
    with pytest.raises(RuntimeError, match="stop here"), headless.headless_lab(repo, "m"):
        pass
    assert seen["config_linked"] is False and seen["weights"] == str(repo / "m/1/model.onnx"), seen
    assert seen["state"] and Path(seen["state"]).parent == seen["copy"].parent, seen
    assert not seen["copy"].exists() and "TBL_STATE_DIR" not in os.environ


def test_a_gpu_sim_sweep_finds_its_operating_point_with_json_and_report(tmp_path):
    out, report = tmp_path / "sweep.json", tmp_path / "sweep.html"
    done = run_cli(["sweep", "--model", "gpu_sim", "--instances", "1,2", "--concurrency", "1,4", "--p99-ms", "1000",
                    *QUICK_SWEEP, "--json", str(out), "--report", str(report)], embedded_env(tmp_path))
    assert done.returncode == DONE_OK, done.stderr
    data = json.loads(out.read_text())
    points = {(instances(p), p["load"]): (p["status"], p["throughput_rps"], p["p99_ms"]) for p in data["points"]}
    assert data["status"] == "done" and data["exit_code"] == DONE_OK and data["space"]["instances"] == [1, 2], data
    assert sorted(points) == [(1, 1.0), (1, 4.0), (2, 1.0), (2, 4.0)], points
    assert all(s == "done" and rps > 0 and p99 > 0 for s, rps, p99 in points.values()), points
    best = data["operating_point"]
    assert best is not None and best["within_sla"] and best["p99_ms"] <= 1000, best
    assert best["key"] in {p["key"] for p in data["points"]} and "operating point: " in done.stdout
    html = report.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "gpu_sim" in html


def test_a_gpu_sim_ab_from_knobs_finds_the_difference_it_requires(tmp_path):
    """A 50 ms queue delay at 50 req/s (requests 20 ms apart, seldom enough to fill a preferred batch early) holds
    each batch until 50 ms after its first request: with a 30 ms SLA B's goodput is about half A's (measured 55-59 %
    lower), a difference that stays clear among four 1 s trials even when one is slow (a cold start, a busy machine:
    that can blur p99)."""
    out = tmp_path / "ab.json"
    done = run_cli(["ab", "--model", "gpu_sim", "--a", "delay_us=0", "--b", "delay_us=50000", "--rate", "50",
                    "--sla-ms", "30", "--trials", "4", *QUICK_AB, "--require-difference", "--json", str(out)],
                   embedded_env(tmp_path))
    assert done.returncode == DONE_OK, done.stderr
    data = json.loads(out.read_text())
    a, b = data["arms"]
    assert [(arm["letter"], arm["typed"]) for arm in (a, b)] == [("A", "delay_us=0"), ("B", "delay_us=50000")], a
    assert b["changes"][0].startswith("delay ") and b["changes"][0].endswith(" → 50000 µs"), b["changes"]
    assert b["name"] == f"B ({', '.join(b['changes'])})" and data["plan"]["arms"][1]["name"] == b["name"]
    assert all(len([v for v in arm["trials"]["p99_ms"] if v]) == 4 for arm in (a, b)), data["arms"]
    goodput = {row["key"]: row for row in data["differences"][b["name"]] if row["class"] == "all"}["goodput_rps"]
    assert data["clear_difference"] and goodput["clear"] and goodput["verdict"] == "worse", goodput
    assert goodput["relative"] < -0.3, f"B kept more of its requests within 30 ms than its delay allows: {goodput}"
    assert min(b["trials"]["p99_ms"]) > 45, f"B's requests did not wait out the delay: {b['trials']['p99_ms']}"


def test_a_third_party_sweep_on_an_embedded_copy_of_its_repository(tmp_path):
    """text_len (a BYTES input, a config with a licence header) on a copy of the user's folder: the folder itself is
    never written."""
    repo = copy_repository(tmp_path / "their_repository")
    before = (repo / "text_len" / "config.pbtxt").read_bytes()
    out = tmp_path / "sweep.json"
    done = run_cli(["sweep", "--model", "text_len", "--model-repository", str(repo), "--instances", "1,2",
                    "--delay-us", "2000", "--concurrency", "1,4", "--p99-ms", "1000", *QUICK_SWEEP, "--json", str(out)],
                   embedded_env(tmp_path))
    assert done.returncode == DONE_OK, done.stderr
    data = json.loads(out.read_text())
    points = {(instances(p), delay_us(p), p["load"]): (p["status"], p["ok"], p["failed"]) for p in data["points"]}
    assert sorted(points) == [(1, 2000, 1.0), (1, 2000, 4.0), (2, 2000, 1.0), (2, 2000, 4.0)], points
    assert all(s == "done" and ok > 0 and failed == 0 for s, ok, failed in points.values()), points
    assert data["operating_point"] is not None and "Example Corp" in data["operating_point"]["config_text"]
    assert (repo / "text_len" / "config.pbtxt").read_bytes() == before, "the user's folder was written"


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
    assert point["status"] == "done" and point["ok"] > 0 and not point["within_sla"], point
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
