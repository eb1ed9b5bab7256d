"""A tritonserver started by hand, the way a user starts one: our own argv, any control mode, no EmbeddedServer."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.server.binary import library_dir, prepare_backends, server_binary
from app.server.embedded import endpoint_at, group_alive, remove_shm, shm_flag, shm_prefix, wait_ready
from app.server.endpoint import Endpoint
from app.server.start_errors import start_with_one_more_try
from app.server.launcher import launcher
from app.server.free_ports import choose_ports

# Every folder loads at start in modes none and poll; one that cannot (onnx_plain: no onnxruntime backend in
# the wheel) must neither end the server (exit-on-error) nor keep it unready (strict readiness).
TOLERANT = ("--exit-on-error=false", "--strict-readiness=false")


@dataclass
class HandStartedServer:
    """One tritonserver process group that a test started itself."""

    proc: subprocess.Popen
    endpoint: Endpoint
    repo: Path
    log_path: Path
    argv: tuple[str, ...]
    shm_prefix: str | None = None  # its Python-backend shared memory (app.server.embedded.shm_flag)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log_tail(self, lines: int = 40) -> str:
        """Return the last lines of the server's log."""
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the server and its Python stubs: TERM to the group, KILL to what is left."""
        pgid = self.proc.pid  # a new session: the server leads its own process group
        for sig, wait_s in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and group_alive(pgid):
                if self.proc.poll() is None:
                    try:
                        self.proc.wait(0.1)
                    except subprocess.TimeoutExpired:
                        pass
                else:
                    time.sleep(0.05)
            if not group_alive(pgid):
                break
        if self.proc.poll() is None:
            self.proc.wait(5)
        remove_shm(self.shm_prefix)


def start_by_hand(repo: Path, base: Path, *mode_args: str, ready_timeout_s: float = 120.0) -> HandStartedServer:
    """Start the wheel's tritonserver on repo with mode_args (e.g. --model-control-mode=poll) on free ports; once
    more (on other ports) when its Python backend aborted, as the lab's own servers do (errors.PYTHON_BACKEND_ABORT)."""
    return start_with_one_more_try(lambda: _start_by_hand(repo, base, mode_args, ready_timeout_s),
                                   "a hand-started tritonserver")


def _start_by_hand(repo: Path, base: Path, mode_args: tuple[str, ...], ready_timeout_s: float) -> HandStartedServer:
    http, grpc, metrics = choose_ports((None, None, None))
    prefix = shm_prefix(http)
    backends = prepare_backends(base / "backends")
    argv = (
        str(server_binary()),
        f"--model-repository={repo}",
        f"--backend-directory={backends}",
        *mode_args,
        "--http-address=127.0.0.1", f"--http-port={http}",
        "--grpc-address=127.0.0.1", f"--grpc-port={grpc}",
        "--metrics-address=127.0.0.1", f"--metrics-port={metrics}",
        "--metrics-interval-ms=1000",
        "--exit-timeout-secs=5",
        shm_flag(prefix),
        *TOLERANT,
    )
    env = dict(os.environ)
    # As EmbeddedServer.start: the stub finds the venv's numpy through PATH and the wheel's libraries through
    # LD_LIBRARY_PATH.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(library_dir()), env.get("LD_LIBRARY_PATH")]))
    log_path = base / f"tritonserver-{http}.log"
    with open(log_path, "wb") as log:
        # The launcher starts it in a new session (start_new_session=True) that dies with the test process.
        proc = launcher().popen(list(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    server = HandStartedServer(proc, endpoint_at("127.0.0.1", (http, grpc, metrics)), Path(repo), log_path, argv,
                               prefix)
    try:
        wait_ready(server.endpoint, ready_timeout_s,
                   lambda: f"tritonserver exited with {proc.returncode}:\n{server.log_tail()}"
                   if proc.poll() is not None else None, server.log_tail)
    except BaseException:
        server.stop()
        raise
    return server


# One server per mode for the whole test session (tests/contract/conftest.py offers the fixtures to the tier; the
# root conftest keeps their tests on one worker).
_STARTED: dict[str, HandStartedServer] = {}


def mode_args(mode: str, repo: Path) -> tuple[str, ...]:
    """Return the flags of a server in mode none (separate-argument form), poll (1 s) or explicit (every model)."""
    from app.server.repository import model_names  # noqa: PLC0415

    if mode == "none":
        return ("--model-control-mode", "none")
    if mode == "poll":
        return ("--model-control-mode=poll", "--repository-poll-secs=1")
    return ("--model-control-mode=explicit", *[f"--load-model={name}" for name in model_names(repo)])


def _shared(mode: str, tmp_path_factory) -> tuple[HandStartedServer, bool]:
    """Return the session's server in mode, starting it on a fresh copy of the third-party repository if needed."""
    from tests.third_party import copy_repository  # noqa: PLC0415

    server = _STARTED.get(mode)
    if server is not None and server.proc.poll() is None:
        return server, False
    base = tmp_path_factory.mktemp(f"hand-started-{mode}")
    repo = copy_repository(base / "repo")  # every folder, onnx_plain included: it stays UNAVAILABLE, with a reason
    server = _STARTED[mode] = start_by_hand(repo, base, *mode_args(mode, repo))
    return server, True


def ask_all_to_stop() -> None:
    """Send TERM to every hand-started server of the session at once; each fixture's stop then waits for its own.

    A tritonserver takes 2-3 s to stop (its Python stubs unload, and it looks for live models once a second): one
    after another, the three modes' servers and the session's own server held a worker 10-16 s at the session's end,
    with the cores idle, in every run (2026-12-05). Once asked, a server ignores a second TERM and exits 0.
    """
    for server in _STARTED.values():
        if server.proc.poll() is None:
            server.proc.send_signal(signal.SIGTERM)


def _serve(mode: str, tmp_path_factory):
    server, mine = _shared(mode, tmp_path_factory)
    yield server
    if mine:
        ask_all_to_stop()  # the session ends: every mode's server stops at once, each fixture then waits for its own
        _STARTED.pop(mode, None)
        server.stop()
        if group_alive(server.pid):  # pragma: no cover - stop() failed
            os.killpg(server.pid, signal.SIGKILL)
            pytest.fail(f"the hand-started tritonserver {server.pid} left processes behind")


@pytest.fixture(scope="session")
def none_server(tmp_path_factory) -> HandStartedServer:
    """A tritonserver started by hand with --model-control-mode none on a copy of the third-party repository."""
    yield from _serve("none", tmp_path_factory)


@pytest.fixture(scope="session")
def poll_server(tmp_path_factory) -> HandStartedServer:
    """The same with --model-control-mode=poll --repository-poll-secs=1."""
    yield from _serve("poll", tmp_path_factory)


@pytest.fixture(scope="session")
def explicit_server(tmp_path_factory) -> HandStartedServer:
    """The same with --model-control-mode=explicit and every model named by --load-model."""
    yield from _serve("explicit", tmp_path_factory)
