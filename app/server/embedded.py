"""Run the tritonserver from the nvidia-pytriton wheel as a child process on 127.0.0.1."""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

from app.paths import MODEL_REPOSITORY, state_dir
from app.switches import switched_on
from app.server.binary import library_dir, prepare_backends, server_binary
from app.server.control_key import lock_flags, process_key
from app.server.endpoint import Endpoint
from app.server.start_errors import ServerStartError, start_with_one_more_try
from app.server.launcher import launcher
from app.server.free_ports import choose_ports
from app.server.repository import completes_nothing, model_names
from app.server.server_process import listener_pid
from app.server.status import repository_call
from loadgen.child_env import child_environment


@dataclass(frozen=True)
class ServerOptions:
    """How to start the embedded server."""

    model_repository: Path = MODEL_REPOSITORY
    http_port: int | None = 8000
    grpc_port: int | None = 8001
    metrics_port: int | None = 8002
    host: str = "127.0.0.1"
    models: tuple[str, ...] | None = None
    ready_timeout_s: float = 90.0
    log_dir: Path | None = None
    extra_args: tuple[str, ...] = field(default=())
    # Triton's auto-complete of model configs: None, off for the lab's own models as bundled (repository.
    # completes_nothing: a reload 0.11 s instead of 1.37 s), on for any other repository; True or False: as said.
    auto_complete: bool | None = None
    # The model-repository API's key; None: this process's (control_key.process_key). A secret: not in repr.
    control_key: str | None = field(default=None, repr=False)


class EmbeddedServer:
    """Own one tritonserver process group: start, wait until ready, stop, read the log."""

    kind = "embedded"

    def __init__(self, options: ServerOptions | None = None) -> None:
        self.options = options or ServerOptions()
        self.proc: subprocess.Popen | None = None
        self.endpoint: Endpoint | None = None
        self.log_path: Path | None = None
        self.started_at: float | None = None
        self.auto_complete: bool | None = None  # whether the running server auto-completes configs (options)
        self.shm_prefix: str | None = None  # its Python-backend shared memory (shm_flag), removed after it stops

    def start(self) -> Endpoint:
        """Start the server and block until it answers ready (and serves metrics) on its own ports.

        Ports are chosen free seconds before tritonserver binds them (after it has loaded its models), so another
        process may take one meanwhile: a ready answer counts only from our own process, and a server that finds
        a port taken is started again on other free ports (at most PORT_TRIES times); a start that Triton's Python
        backend aborted (errors.PYTHON_BACKEND_ABORT) is made once more."""
        if self.running():
            return self.endpoint
        return start_with_one_more_try(self._start_on_free_ports, "tritonserver")

    def _start_on_free_ports(self) -> Endpoint:
        opts = self.options
        return start_on_free_ports(self._start, (opts.http_port, opts.grpc_port, opts.metrics_port), opts.host)

    def _start(self, ports: tuple[int, int, int]) -> Endpoint:
        opts = self.options
        repo = Path(opts.model_repository).resolve()
        models = opts.models if opts.models is not None else tuple(model_names(repo))
        self.auto_complete = (not completes_nothing(repo, MODEL_REPOSITORY) if opts.auto_complete is None
                              else opts.auto_complete)
        http, grpc, metrics = ports
        log_dir = Path(opts.log_dir or state_dir() / "logs")
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"tritonserver-{http}.log"
        backends = prepare_backends(state_dir() / "backends")
        key = opts.control_key or process_key()
        self.shm_prefix = shm_prefix(http)
        argv = [
            str(server_binary()),
            f"--model-repository={repo}",
            f"--backend-directory={backends}",
            "--model-control-mode=explicit",
            *[f"--load-model={name}" for name in models],
            f"--http-address={opts.host}", f"--http-port={http}",
            f"--grpc-address={opts.host}", f"--grpc-port={grpc}",
            f"--metrics-address={opts.host}", f"--metrics-port={metrics}",
            *metrics_flags(),
            f"--exit-timeout-secs={EXIT_TIMEOUT_S}",
            *MODEL_FAULTS_SHOWN,
            *lock_flags(key),  # load, unload and the index only with the key: no other local process reconfigures it
            shm_flag(self.shm_prefix),
            *([] if self.auto_complete else [NO_AUTO_COMPLETE]),
            *opts.extra_args,
        ]
        with open(self.log_path, "wb") as log:
            self.proc = launcher().popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=server_environment())
        self.endpoint = endpoint_at(opts.host, (http, grpc, metrics), key)
        self.started_at = time.time()
        _live.add(self)
        try:
            wait_ready(self.endpoint, opts.ready_timeout_s, self._problem, self.log_tail, ours=self._answers)
        except ServerStartError:
            self.stop()
            raise
        return self.endpoint

    def describe(self) -> str:
        """Return what runs, for the Overview page."""
        pid = self.proc.pid if self.proc is not None else None
        return f"embedded tritonserver (nvidia-pytriton wheel, CPU), process {pid}" if pid else "embedded: not running"

    def running(self) -> bool:
        """Return True while the server process is alive."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 15.0) -> None:
        """Stop the server and every process of its group (the Python backend stubs)."""
        proc, self.proc = self.proc, None
        _live.discard(self)
        if proc is None:
            return
        pgid = proc.pid  # start_new_session makes the server its group's leader
        if proc.poll() is None:
            if self.endpoint is not None:
                unload_all(self.endpoint, min(timeout_s, EXIT_TIMEOUT_S), proc.poll)
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                pass
        _kill_group(pgid)
        if proc.poll() is None:
            proc.wait(5)
        remove_shm(self.shm_prefix)

    def restart(self) -> Endpoint:
        """Stop and start again on the same options."""
        self.stop()
        return self.start()

    def log_tail(self, lines: int = 40) -> str:
        """Return the last lines of the server log."""
        if not self.log_path or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def _problem(self) -> str | None:
        """Return why the server cannot become ready any more (None while it still may); PortTaken when another
        process bound one of its ports first."""
        if self.proc.poll() is not None:
            tail = self.log_tail()
            raise_if_port_taken(tail, "tritonserver")
            return f"tritonserver exited with code {self.proc.returncode}.\n{tail}"
        return None

    def _answers(self, url: str) -> bool:
        """Return False when another process listens on url's port (True when it is ours or cannot be told)."""
        holder = listener_pid(urlsplit(url).port)
        return holder is None or holder == self.proc.pid


EXIT_TIMEOUT_S = 5  # how long Triton waits at exit for connections, requests and unloads (--exit-timeout-secs)
UNLOADING = ("READY", "LOADING", "UNLOADING")  # index states of a version still up or on its way


def unload_all(endpoint: Endpoint, wait_s: float, exited: Callable[[], int | None]) -> bool:
    """Unload every model through the repository API and wait (at most wait_s) until none is up or unloading;
    return True when none is. Best effort: a server that does not answer is stopped as it would have been.

    Triton's own stop looks once a second whether its models are gone, and the Python backend takes a second to
    finalize each instance (StubLauncher::UpdateHealth sleeps 1 s), so a model of one instance held the exit until
    the second look, 2 s after the signal; one of two instances, 3 s. Unloaded first and watched every 50 ms, the
    signal finds nothing left to wait for. Models unload side by side, each one's instances one after another."""
    deadline = time.monotonic() + wait_s
    try:
        index = repository_call(endpoint, "/v2/repository/index")
        for name in sorted({m["name"] for m in index if m.get("state") in UNLOADING}):
            repository_call(endpoint, f"/v2/repository/models/{quote(name, safe='')}/unload")
        while exited() is None:
            if not any(m.get("state") in UNLOADING for m in repository_call(endpoint, "/v2/repository/index")):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return False


def endpoint_at(host: str, ports: tuple[int, int, int], control_key: str | None = None) -> Endpoint:
    """Return the endpoint of a server on host with its HTTP, gRPC and metrics ports (and its control key)."""
    http, grpc, metrics = ports
    return Endpoint(f"http://{host}:{http}", f"{host}:{grpc}", f"http://{host}:{metrics}/metrics", control_key)


def server_environment(environ=None) -> dict[str, str]:
    """Return the wheel tritonserver's environment: the allowlist (no secret of the lab's: a model's Python code
    runs in the server's processes), this interpreter's folder first on PATH, the wheel's libraries first."""
    env = os.environ if environ is None else environ
    return child_environment(env, overrides={
        # The stub links the system libpython; it sees the venv's numpy only via PATH.
        "PATH": os.pathsep.join(filter(None, [str(Path(sys.executable).parent), env.get("PATH")])),
        # The copied stub no longer finds the wheel's bundled libraries through its RPATH.
        "LD_LIBRARY_PATH": os.pathsep.join(filter(None, [str(library_dir()), env.get("LD_LIBRARY_PATH")])),
    })


def wait_ready(endpoint: Endpoint, timeout_s: float, problem: Callable[[], str | None], log_tail: Callable[[], str],
               what: str = "tritonserver", ours: Callable[[str], bool] | None = None) -> None:
    """Block until /v2/health/ready answers 200 and then its metrics port answers too, each from our own process
    when ours(url) can tell; ServerStartError when problem() names one or time runs out.

    Triton opens its metrics port after its HTTP port (tens of ms later here, more on a busy host): a caller that
    scrapes /metrics right after a ready answer found it refusing connections. Ports are chosen free seconds before
    Triton binds them: another server started meanwhile may answer on one (2026-12-05: a lab took another's metrics
    port, 8002, and ran against a server that had exited on it). Such an answer is waited past; ours then fails to
    bind that port and exits, and problem() says so."""
    deadline = time.monotonic() + timeout_s
    waiting_for = [f"{endpoint.http_url}/v2/health/ready", endpoint.metrics_url]
    while time.monotonic() < deadline:
        reason = problem()
        if reason:
            raise ServerStartError(reason)
        try:
            with urllib.request.urlopen(waiting_for[0], timeout=1) as resp:
                if resp.status == 200 and (ours is None or ours(waiting_for[0])):
                    waiting_for.pop(0)
                    if not waiting_for:
                        return
                    continue
        except OSError:
            pass
        time.sleep(0.25)
    what_failed = "ready" if len(waiting_for) == 2 else f"serving metrics at {endpoint.metrics_url}"
    raise ServerStartError(f"{what} was not {what_failed} after {timeout_s:.0f} s.\n{log_tail()}")


PORT_TRIES = 3


class PortTaken(ServerStartError):
    """Another process bound one of the server's ports between their choice and the server's bind."""


def raise_if_port_taken(log_tail: str, what: str) -> None:
    """Raise PortTaken when an exited server's log says one of its ports was in use (Triton exits on it)."""
    if "already in use" in log_tail:
        raise PortTaken(f"a port of {what} was taken before it could bind it.\n{log_tail}")


def start_on_free_ports(start: Callable[[tuple[int, int, int]], Endpoint], preferred: tuple[int | None, ...],
                        host: str) -> Endpoint:
    """Return start(ports): the preferred ports when free, else any; other free ports when one was taken before the
    server bound it (PortTaken), at most PORT_TRIES starts."""
    for attempt in range(PORT_TRIES):
        try:
            return start(choose_ports(preferred if attempt == 0 else (None, None, None), host))
        except PortTaken:
            if attempt == PORT_TRIES - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


# A model that cannot load (a missing backend, a bad config, an import error in its model.py) must not keep the
# server from starting or from being ready: it is listed UNAVAILABLE with Triton's reason, the others serve.
MODEL_FAULTS_SHOWN = ("--exit-on-error=false", "--strict-readiness=false")
NO_AUTO_COMPLETE = "--disable-auto-complete-config"  # ServerOptions.auto_complete
# Triton's latency summaries (server p50-p99 over a sliding minute) are off unless this variable is 1: on, as in every
# server the lab started before 2026-12-07, each request also feeds five quantile sketches that grow with the last
# minute's requests: on mlp, after a minute of a closed loop, the server took 1.53-1.75x the CPU per answer and
# answered 0.77-0.80x as fast (python -m bench.server_summaries; docs/MEASUREMENTS.md, "Triton's latency
# summaries"): the lab measured a server slower than Triton's default one, and slower the longer it ran.
SUMMARIES_VARIABLE = "TBL_SERVER_SUMMARIES"


def metrics_flags(environ=None) -> tuple[str, ...]:
    """Return the /metrics flags of a server the lab starts: a scrape a second, and the latency summaries only when
    SUMMARIES_VARIABLE asks for them (Triton's default leaves them off too)."""
    wanted = switched_on(SUMMARIES_VARIABLE, environ)
    return ("--metrics-interval-ms=1000", *(("--metrics-config=summary_latencies=true",) if wanted else ()))


SHM = Path("/dev/shm")


def shm_prefix(http_port: int) -> str:
    """Return the names of one server's Python-backend shared-memory regions: this process's and the server's port."""
    return f"tbl_{os.getpid()}_{http_port}_"


def shm_flag(prefix: str) -> str:
    """Return the flag that names a server's Python-backend shared-memory regions (in /dev/shm) with prefix: Triton's
    default name is the same for every server on the machine, so what a server killed before its stubs freed them
    left behind could not be told from another server's (2026-12-06: 188 regions of 1 MiB from test runs)."""
    return f"--backend-config=python,shm-region-prefix-name={prefix}"


def remove_shm(prefix: str | None) -> None:
    """Remove what is left of a stopped server's shared-memory regions (its prefix, shm_flag)."""
    if not prefix:
        return
    for path in SHM.glob(f"{prefix}*"):
        try:
            path.unlink()
        except OSError:  # gone meanwhile, or not ours to remove after all: stopping goes on
            pass


def group_alive(pgid: int) -> bool:
    """Return True while any process of the process group still exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.05)


_live: set[EmbeddedServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_live):
        server.stop(timeout_s=5)
