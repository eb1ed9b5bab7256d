"""Embedded server lifecycle: ports, readiness errors, cleanup, and the foreground CLI."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from urllib.parse import urlsplit

import pytest

from app.paths import MODEL_REPOSITORY, ROOT
from app.server.embedded import SHM, EmbeddedServer, ServerOptions, group_alive
from app.server.start_errors import ServerStartError
from app.server.free_ports import choose_ports, is_free
from app.server.status import fetch_status, with_log_reasons
from tests.helpers import copy_of_the_lab_repository, wait_until
from tests.contract.server.squatter import Squatter


def test_fixture_server_is_ready_and_bound_to_loopback(triton):
    with urllib.request.urlopen(f"{triton.url}/v2/health/ready") as resp:
        assert resp.status == 200
    assert triton.url.startswith("http://127.0.0.1:")


def test_status_lists_every_shipped_model_ready(triton):
    status = fetch_status(triton.endpoint)
    assert status.up and status.ready and status.version == "2.51.0"
    assert {m.name: m.state for m in status.models} == {
        "gpu_sim": "READY", "mlp": "READY", "stream_acc": "READY", "token_sim": "READY"}


def test_the_lab_s_own_models_are_served_without_auto_complete_and_as_one_that_auto_completes(triton, tmp_path):
    """The session server serves a copy of the lab's models, so it runs without auto-complete
    (repository.completes_nothing): every config it serves is the one a server with auto-complete serves from the
    same files. (What it saves per reload, the auto-complete stub's 1 s sleep: bench/config_serve_time.)"""
    import tritonclient.http as http  # noqa: PLC0415

    assert triton.server.auto_complete is False
    server = EmbeddedServer(ServerOptions(model_repository=copy_of_the_lab_repository(tmp_path), http_port=None,
                                          grpc_port=None, metrics_port=None, log_dir=tmp_path, auto_complete=True))
    endpoint = server.start()
    try:
        assert server.auto_complete is True
        names = [m.name for m in fetch_status(triton.endpoint).models]
        served = {n: http.InferenceServerClient(triton.endpoint.host_port).get_model_config(n) for n in names}
        completed = {n: http.InferenceServerClient(endpoint.host_port).get_model_config(n) for n in names}
    finally:
        server.stop()
    assert sorted(names) == ["gpu_sim", "mlp", "stream_acc", "token_sim"]
    for name in names:
        assert served[name] == completed[name], (name, served[name], completed[name])


def test_status_of_a_dead_server_is_reported_not_raised():
    from app.server.endpoint import Endpoint

    port = choose_ports((None,))[0]
    status = fetch_status(Endpoint(f"http://127.0.0.1:{port}", "", ""), timeout_s=0.5)
    assert not status.up and "not answering" in status.error


def test_taken_preferred_port_falls_back_to_a_free_one():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assert not is_free(taken)
        (port,) = choose_ports((taken,))
        assert port != taken and is_free(port)


def test_a_broken_model_is_listed_with_its_reason_and_the_others_serve(tmp_path):
    """A user's repository may hold a model that cannot load: the server still starts, the model is UNAVAILABLE
    with Triton's reason, the other models serve."""
    repo = tmp_path / "repo"
    shutil.copytree(MODEL_REPOSITORY / "mlp", repo / "mlp")
    shutil.copytree(MODEL_REPOSITORY / "gpu_sim", repo / "gpu_sim")
    (repo / "mlp" / "config.pbtxt").write_text('name: "mlp"\nbackend: "python"\nmax_batch_size: -3\n')
    server = EmbeddedServer(ServerOptions(repo, None, None, None, log_dir=tmp_path, ready_timeout_s=60))
    try:
        endpoint = server.start()
        states = {m.name: m for m in with_log_reasons(fetch_status(endpoint), server.log_tail(2000)).models}
        assert states["gpu_sim"].state == "READY"
        # Triton lists a config it could not read without a state; its reason is only in the log
        assert not states["mlp"].state and "must be non-negative" in states["mlp"].reason, states["mlp"]
    finally:
        server.stop()
    assert not server.running()


def test_a_server_that_cannot_start_gives_a_clear_error_with_the_log_and_cleans_up(tmp_path):
    server = EmbeddedServer(ServerOptions(MODEL_REPOSITORY, None, None, None, models=("mlp",), log_dir=tmp_path,
                                          ready_timeout_s=60, extra_args=("--no-such-flag=1",)))
    with pytest.raises(ServerStartError) as err:
        server.start()
    assert "exited with code 1" in str(err.value) and "--strict-model-config" in str(err.value)  # the usage text
    assert not server.running()


def test_stop_ends_the_server_and_its_stub_processes(tmp_path):
    server = EmbeddedServer(ServerOptions(MODEL_REPOSITORY, None, None, None, models=("mlp",), log_dir=tmp_path))
    server.start()
    pgid = server.proc.pid
    server.stop()
    assert not group_alive(pgid)


def test_stop_unloads_every_model_before_the_signal_so_triton_finds_none_left(tmp_path):
    """Triton's stop looks once a second whether its models are gone; unloaded through the API first (watched every
    50 ms), the signal finds none left, and each model was still unloaded gracefully (its instances finalized)."""
    server = EmbeddedServer(ServerOptions(MODEL_REPOSITORY, None, None, None, models=("mlp", "gpu_sim"),
                                          log_dir=tmp_path))
    server.start()
    server.stop()
    log = server.log_path.read_text(errors="replace")
    after = log[log.index("Signal (15) received"):]
    before = log[:log.index("Signal (15) received")]
    assert "successfully unloaded 'mlp'" in before and "successfully unloaded 'gpu_sim'" in before, before[-3000:]
    assert "Found 0 live models" in after and "Found 1 live models" not in after, after[:3000]


def test_what_a_killed_server_leaves_in_shared_memory_goes_when_the_lab_stops_it(tmp_path):
    """The Python backend's regions in /dev/shm carry this server's own prefix (Triton's default is every server's):
    a server killed before its stubs freed them leaves them behind, and stop removes them, none of another's."""
    server = EmbeddedServer(ServerOptions(MODEL_REPOSITORY, None, None, None, models=("gpu_sim",), log_dir=tmp_path))
    server.start()
    prefix = server.shm_prefix

    def regions() -> list[str]:
        return sorted(p.name for p in SHM.glob(f"{prefix}*"))

    other = SHM / f"tbl_not_{prefix}"  # a name another server could have: left alone
    other.write_bytes(b"")
    try:
        assert regions(), f"the server's Python backend made no region named {prefix}*"
        os.killpg(server.proc.pid, signal.SIGKILL)  # the server and its stubs: nobody frees anything
        server.proc.wait(10)
        left = regions()
        assert left, "a killed server left no region: this test no longer shows the leak it guards against"
    finally:
        server.stop()
    try:
        assert regions() == [], f"stop left {regions()} of the killed server's {left}"
        assert other.exists()
    finally:
        other.unlink()


def test_cli_serves_every_model_until_interrupted(tmp_path):
    http_port, grpc_port, metrics_port = choose_ports((None, None, None))
    env = dict(os.environ, TBL_STATE_DIR=str(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.server", f"--http-port={http_port}", f"--grpc-port={grpc_port}",
         f"--metrics-port={metrics_port}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        lines = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if "Ctrl-C" in line or not line:
                break
        text = "".join(lines)
        assert f"http://127.0.0.1:{http_port}" in text, text
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/v2/health/ready") as resp:
            assert resp.status == 200
        for model in ("gpu_sim", "mlp", "stream_acc", "token_sim"):
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/v2/models/{model}/ready") as resp:
                assert resp.status == 200
        proc.send_signal(signal.SIGINT)
        # tritonserver ends its models' stubs before it exits: ~5 s on a quiet machine, over 30 s once on a busy host
        try:
            code = proc.wait(90)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no exit 90 s after Ctrl-C; it printed before: {text}")
        assert code == 0, text
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert is_free(http_port)


def test_server_dies_with_the_process_that_started_it(tmp_path):
    """Killing the app (SIGKILL, no cleanup) still ends tritonserver and its stubs."""
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from app.server.embedded import EmbeddedServer, ServerOptions\n"
        f"s = EmbeddedServer(ServerOptions(Path({str(MODEL_REPOSITORY)!r}), None, None, None, models=('mlp',), "
        f"log_dir=Path({str(tmp_path)!r})))\n"
        "s.start()\n"
        "print(s.proc.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    app = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                           env=dict(os.environ, TBL_STATE_DIR=str(tmp_path)))
    try:
        server_pid = int(app.stdout.readline())
        assert group_alive(server_pid)  # alive while the app lives
        app.kill()
        app.wait(10)
        try:
            wait_until(lambda: not group_alive(server_pid), 30, "tritonserver to die with the process that started it")
        finally:
            if group_alive(server_pid):
                os.killpg(server_pid, signal.SIGKILL)
    finally:
        if app.poll() is None:
            app.kill()


@pytest.mark.parametrize("which", [0, 2], ids=["http", "metrics"])
def test_a_port_taken_after_it_was_chosen_is_not_mistaken_for_the_server(tmp_path, monkeypatch, which):
    """Another process answering on a chosen port is not our server: we wait for ours, and when ours cannot bind it
    starts again on other free ports. The metrics port too (2026-12-05: a dashboard's server took 8002 while another
    lab's answered there; the lab ran against its own server, which had exited on that port)."""
    import app.server.embedded as embedded  # noqa: PLC0415

    squatter = Squatter()
    calls = squatter.first_choice_takes(embedded, which, monkeypatch)
    server = EmbeddedServer(ServerOptions(MODEL_REPOSITORY, None, None, None, models=("gpu_sim",), log_dir=tmp_path))
    try:
        endpoint = server.start()
        logs = {log.name: log.read_text() for log in tmp_path.glob("tritonserver-*.log")}
        assert len(calls) == 2 and len(logs) == 2, (calls, list(logs))
        assert any(f"127.0.0.1:{squatter.port}' already in use" in text for text in logs.values()), logs
        assert squatter.port not in {urlsplit(endpoint.http_url).port, urlsplit(endpoint.metrics_url).port}, endpoint
        assert fetch_status(endpoint).models[0].name == "gpu_sim" and server.running()
    finally:
        server.stop()
        squatter.close()


def _stand_in(tmp_path, aborts: int, then: str) -> tuple:
    """A tritonserver stand-in whose first `aborts` starts write the Python backend's abort (as Triton 2.51 does on a
    starved host: server #5949, #8882) and exit 134; its later starts run `then` with the server's arguments."""
    starts = tmp_path / "starts"
    script = tmp_path / "tritonserver"
    script.write_text(f"""#!/bin/sh
echo x >> {starts}
if [ "$(wc -l < {starts})" -le {aborts} ]; then
  echo "I1204 14:55:24.214952 1 python_be.cc:2249] TRITONBACKEND_ModelInstanceInitialize: gpu_sim_0_0 (CPU device 0)"
  echo "terminate called after throwing an instance of 'boost::interprocess::lock_exception'"
  echo "  what():  boost::interprocess::lock_exception"
  exit 134
fi
exec {then} "$@"
""")
    script.chmod(0o755)
    return script, starts


def _starts(starts) -> int:
    return starts.read_text().count("x")


def test_a_start_the_python_backend_aborted_is_made_once_more_and_serves(tmp_path, monkeypatch):
    import app.server.embedded as embedded  # noqa: PLC0415

    script, starts = _stand_in(tmp_path, 1, str(embedded.server_binary()))
    monkeypatch.setattr(embedded, "server_binary", lambda: script)
    server = EmbeddedServer(ServerOptions(MODEL_REPOSITORY, None, None, None, models=("gpu_sim",), log_dir=tmp_path))
    try:
        endpoint = server.start()
        assert _starts(starts) == 2
        assert {m.name: m.state for m in fetch_status(endpoint).models}["gpu_sim"] == "READY"
    finally:
        server.stop()


@pytest.mark.parametrize(("aborts", "said", "tries"), [
    (2, "lock_exception", 2),  # a second abort: raised, with no third start
    (0, "exited with code 1", 1),  # any other failure (/bin/false): raised at once
])
def test_a_second_abort_or_any_other_failure_is_raised_with_no_more_tries(tmp_path, monkeypatch, aborts, said, tries):
    import app.server.embedded as embedded  # noqa: PLC0415

    script, starts = _stand_in(tmp_path, aborts, "/bin/false")
    monkeypatch.setattr(embedded, "server_binary", lambda: script)
    server = EmbeddedServer(ServerOptions(MODEL_REPOSITORY, None, None, None, models=("gpu_sim",), log_dir=tmp_path,
                                          ready_timeout_s=30))
    with pytest.raises(ServerStartError) as err:
        server.start()
    assert said in str(err.value) and _starts(starts) == tries, (str(err.value), _starts(starts))
    assert not server.running()


def test_triton_s_latency_summaries_are_off_unless_asked_for(triton, tmp_path, monkeypatch):
    """They cost the server CPU on every request (app.server.embedded.SUMMARIES_VARIABLE): the session's server, started
    as the lab starts one, has its counters and none; a server started with TBL_SERVER_SUMMARIES=1 has both."""
    from app.server.embedded import SUMMARIES_VARIABLE  # noqa: PLC0415

    def families(endpoint) -> set[str]:
        with urllib.request.urlopen(endpoint.metrics_url, timeout=10) as resp:
            text = resp.read().decode()
        return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE nv_inference_")}

    served = families(triton.endpoint)
    assert "nv_inference_request_duration_us" in served and "nv_inference_request_summary_us" not in served, served
    monkeypatch.setenv(SUMMARIES_VARIABLE, "1")
    server = EmbeddedServer(ServerOptions(MODEL_REPOSITORY, None, None, None, models=("mlp",), log_dir=tmp_path))
    try:
        asked = families(server.start())
    finally:
        server.stop()
    assert {"nv_inference_request_summary_us", "nv_inference_queue_summary_us",
            "nv_inference_request_duration_us"} <= asked, asked
