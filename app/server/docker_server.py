"""Run tritonserver in a Docker container through the Docker SDK: the lab starts, restarts, watches and
removes it, behind the same interface as the embedded server.

Two kinds of image:
- a Triton image (the NGC `tritonserver` image on GPU hosts): its own `tritonserver`, the model repository
  mounted at /models, GPUs requested with a device request;
- the local CPU image (`TBL_DOCKER_IMAGE=local`, the default): an empty image the lab makes in a second (no
  registry needed) whose container runs the checkout's wheel `tritonserver` with the host's system
  directories, the interpreter and the checkout mounted read-only at their own paths. The container is real
  (its own PID and mount namespaces, lifecycle, logs and health through the daemon); its userland is the
  host's, so it needs nothing downloaded.

Networking: the host's network with every port bound to 127.0.0.1 (what these machines allow: the daemon
runs without a bridge), or ports published on 127.0.0.1 only (TBL_DOCKER_NETWORK=ports).
"""
from __future__ import annotations

import atexit
import io
import os
import re
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from app.paths import MODEL_REPOSITORY, ROOT, state_dir
from app.server.binary import library_dir, prepare_backends, server_binary
from app.server.control_key import lock_flags, process_key
from app.server.embedded import (MODEL_FAULTS_SHOWN, endpoint_at, metrics_flags, raise_if_port_taken,
                                 start_on_free_ports, wait_ready)
from app.server.endpoint import Endpoint
from app.server.start_errors import ServerStartError, start_with_one_more_try
from app.server.repository import model_names
from app.server.server_process import descends_from, listener_pid

LOCAL_IMAGE = "tbl-triton-local:1"  # the image the lab makes: empty, the host's userland is mounted
NGC_IMAGE = "nvcr.io/nvidia/tritonserver:24.10-py3"  # server 2.51, as embedded on CPU
LABEL = "tbl.lab"  # every container the lab starts carries it (value: this process's PID)
HOST_SYSTEM = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/ld.so.conf",
               "/etc/ld.so.conf.d", "/etc/localtime")
CONTAINER_PORTS = (8000, 8001, 8002)  # inside the container, when ports are published
_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$")
_GPUS = re.compile(r"^(|all|\d+|\d+(,\d+)*)$")


class DockerUnavailable(ServerStartError):
    """No Docker daemon answers, or the image cannot be had."""


@dataclass(frozen=True)
class DockerOptions:
    """How to start the Triton container."""

    image: str = "local"  # "local": the lab's CPU image; else an image reference (pulled when missing)
    model_repository: Path = MODEL_REPOSITORY
    gpus: str = ""  # "" none, "all", a count ("2") or device ids ("0,1")
    network: str = "host"  # host | ports
    http_port: int | None = 8000
    grpc_port: int | None = 8001
    metrics_port: int | None = 8002
    host: str = "127.0.0.1"
    models: tuple[str, ...] | None = None
    config_name: str | None = None  # --model-config-name (the NGC image serves configs/gpu.pbtxt)
    ready_timeout_s: float = 120.0
    name: str = ""  # container name; empty: tbl-triton-<http port>
    pull: bool = True
    shm_size: str = "1g"
    extra_args: tuple[str, ...] = field(default=())

    def __post_init__(self):
        if self.network not in ("host", "ports"):
            raise ValueError(f"TBL_DOCKER_NETWORK must be host or ports, got {self.network!r}")
        if not _GPUS.match(self.gpus.replace(" ", "")):
            raise ValueError(f"TBL_DOCKER_GPUS must be empty, all, a count or device ids like 0,1; got {self.gpus!r}")
        if self.name and not _NAME.match(self.name):
            raise ValueError(f"a container name is letters, digits, _ . - (up to 63); got {self.name!r}")
        if self.host != "127.0.0.1":
            raise ValueError("the lab binds its server to 127.0.0.1 only")

    @property
    def local(self) -> bool:
        return self.image == "local"

    @classmethod
    def from_env(cls, env: dict, repo: Path) -> DockerOptions:
        """Read TBL_DOCKER_IMAGE, TBL_DOCKER_GPUS, TBL_DOCKER_NETWORK, TBL_DOCKER_CONFIG_NAME, TBL_DOCKER_PULL."""
        image = env.get("TBL_DOCKER_IMAGE", "local").strip() or "local"
        config_name = env.get("TBL_DOCKER_CONFIG_NAME", "gpu" if image != "local" else "").strip() or None
        return cls(image=image, model_repository=repo, gpus=env.get("TBL_DOCKER_GPUS", "").strip(),
                   network=env.get("TBL_DOCKER_NETWORK", "host").strip() or "host", config_name=config_name,
                   pull=env.get("TBL_DOCKER_PULL", "1") not in ("0", "false", "no"))


def device_requests(gpus: str) -> list:
    """Return the Docker device requests for a GPU setting: none, all, a count, or a list of device ids."""
    from docker.types import DeviceRequest  # noqa: PLC0415 - the SDK is needed only with the Docker backend

    gpus = gpus.replace(" ", "")
    if not gpus:
        return []
    if gpus == "all":
        return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    if gpus.isdigit() and "," not in gpus:
        return [DeviceRequest(count=int(gpus), capabilities=[["gpu"]])]
    return [DeviceRequest(device_ids=gpus.split(","), capabilities=[["gpu"]])]


def server_args(opts: DockerOptions, ports: tuple[int, int, int], repo_in_container: str, models) -> list[str]:
    """Return tritonserver's flags: the embedded server's (the model-repository API locked by this process's key),
    with the addresses the network mode needs."""
    address = opts.host if opts.network == "host" else "0.0.0.0"  # noqa: S104 - published on 127.0.0.1 only
    http, grpc, metrics = ports if opts.network == "host" else CONTAINER_PORTS
    return [
        f"--model-repository={repo_in_container}",
        "--model-control-mode=explicit",
        *[f"--load-model={name}" for name in models],
        *([f"--model-config-name={opts.config_name}"] if opts.config_name else []),
        f"--http-address={address}", f"--http-port={http}",
        f"--grpc-address={address}", f"--grpc-port={grpc}",
        f"--metrics-address={address}", f"--metrics-port={metrics}",
        *metrics_flags(),
        "--exit-timeout-secs=5",
        *MODEL_FAULTS_SHOWN,
        *lock_flags(process_key()),
        *opts.extra_args,
    ]


def run_kwargs(opts: DockerOptions, ports: tuple[int, int, int], name: str) -> dict:
    """Return the containers.run() arguments for the options (pure: what the tests and the page show)."""
    repo = Path(opts.model_repository).resolve()
    models = opts.models if opts.models is not None else tuple(model_names(repo))
    kwargs: dict = {"name": name, "detach": True, "labels": {LABEL: str(os.getpid())}, "shm_size": opts.shm_size,
                    "stdin_open": False, "tty": False}
    if opts.local:
        backends = prepare_backends(state_dir() / "backends")
        argv = [str(server_binary()), *server_args(opts, ports, str(repo), models), f"--backend-directory={backends}"]
        mounts = [p for p in HOST_SYSTEM if os.path.exists(p)]
        mounts += _outermost([ROOT, repo, backends, Path(sys.prefix), Path(sys.base_prefix), library_dir()])
        kwargs |= {"image": LOCAL_IMAGE, "command": argv,
                   "volumes": {str(p): {"bind": str(p), "mode": "ro"} for p in mounts},
                   # Named here, never the lab's own: a model's Python code must find no secret of the lab's.
                   "environment": {
                       "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
                       "LD_LIBRARY_PATH": f"{library_dir()}:{Path(sys.base_prefix) / 'lib'}",
                       "HOME": "/tmp"}}
    else:
        kwargs |= {"image": opts.image, "command": ["tritonserver", *server_args(opts, ports, "/models", models)],
                   "volumes": {str(repo): {"bind": "/models", "mode": "ro"}}}
    if opts.network == "host":
        kwargs["network_mode"] = "host"
    else:
        kwargs["ports"] = {f"{inside}/tcp": (opts.host, outside) for inside, outside in zip(CONTAINER_PORTS, ports)}
    requests = device_requests(opts.gpus)
    if requests:
        kwargs["device_requests"] = requests
    return kwargs


def _outermost(paths: list[Path]) -> list[Path]:
    """Return the paths that no other path of the list contains (one mount each)."""
    resolved = sorted({Path(p).resolve() for p in paths}, key=lambda p: len(p.parts))
    out: list[Path] = []
    for p in resolved:
        if not any(p == q or q in p.parents for q in out):
            out.append(p)
    return out


def local_image_tar() -> bytes:
    """Return the local image's root filesystem as a tar: empty but for the folders a container needs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, mode in (("tmp", 0o1777), ("etc", 0o755), ("models", 0o755)):
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, 0
            tar.addfile(info)
    return buf.getvalue()


class DockerServer:
    """Own one Triton container: start, wait until ready, restart, stop and remove, read its log."""

    kind = "docker"

    def __init__(self, options: DockerOptions | None = None, client=None) -> None:
        self.options = options or DockerOptions()
        self._client = client
        self.container = None
        self.endpoint: Endpoint | None = None
        self.started_at: float | None = None
        self.log_path = None  # the log is the container's (log_tail)

    @property
    def client(self):
        """Return the Docker SDK client (from the environment: DOCKER_HOST or /var/run/docker.sock)."""
        if self._client is None:
            try:
                import docker  # noqa: PLC0415

                self._client = docker.from_env(timeout=30)
                self._client.ping()
            except Exception as exc:  # noqa: BLE001 - any failure to reach the daemon says the same
                self._client = None
                raise DockerUnavailable(f"no Docker daemon answers ({_short(exc)}); start one (dockerd) or "
                                        "unset TBL_SERVER to use the embedded server") from exc
        return self._client

    def describe(self) -> str:
        """Return what runs: image, container and network, for the Overview page."""
        c = self.container
        what = "lab CPU image (host userland, wheel tritonserver)" if self.options.local else self.options.image
        gpus = f", GPUs {self.options.gpus}" if self.options.gpus else ""
        return (f"Docker container {c.name} ({c.short_id}) from {what}, {self.options.network} network{gpus}"
                if c is not None else f"Docker ({what}): no container")

    def start(self) -> Endpoint:
        """Start the container and block until /v2/health/ready answers 200 and its metrics port answers; a container
        whose Python backend aborted at start (errors.PYTHON_BACKEND_ABORT) is started once more."""
        if self.running():
            return self.endpoint
        return start_with_one_more_try(self._start_container, "the Triton container")

    def _start_container(self) -> Endpoint:
        opts = self.options
        return start_on_free_ports(self._start_on, (opts.http_port, opts.grpc_port, opts.metrics_port), opts.host)

    def _start_on(self, ports: tuple[int, int, int]) -> Endpoint:
        opts = self.options
        name = opts.name or f"tbl-triton-{ports[0]}"
        kwargs = run_kwargs(opts, ports, name)  # ServerBinaryError here (the lab's image) before Docker is asked
        self._ensure_image()
        self._remove_stale(name)
        try:
            self.container = self.client.containers.run(**kwargs)
        except Exception as exc:  # noqa: BLE001 - the daemon's refusal, said plainly
            raise ServerStartError(f"Docker could not start the Triton container: {_short(exc)}") from exc
        self.endpoint = endpoint_at(opts.host, ports, process_key())
        self.started_at = time.time()
        _live.add(self)
        try:
            wait_ready(self.endpoint, opts.ready_timeout_s, self._problem, self.log_tail, "the Triton container",
                       ours=self._answers)
        except ServerStartError:
            self.stop()
            raise
        return self.endpoint

    def running(self) -> bool:
        """Return True while the container runs."""
        if self.container is None:
            return False
        try:
            self.container.reload()
        except Exception:  # noqa: BLE001 - gone is not running
            return False
        return self.container.status == "running"

    def stop(self, timeout_s: float = 15.0) -> None:
        """Stop the container (SIGTERM, then SIGKILL after timeout_s) and remove it."""
        container, self.container = self.container, None
        _live.discard(self)
        if container is None:
            return
        try:
            container.stop(timeout=int(timeout_s))
        except Exception:  # noqa: BLE001, S110 - removing it below kills it anyway
            pass
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001, S110 - already gone
            pass

    def restart(self) -> Endpoint:
        """Stop and start again on the same options (a new container)."""
        self.stop()
        return self.start()

    def log_tail(self, lines: int = 40) -> str:
        """Return the last lines of the container's log."""
        if self.container is None:
            return ""
        try:
            return self.container.logs(tail=lines).decode(errors="replace")
        except Exception as exc:  # noqa: BLE001 - a log that cannot be read is said so
            return f"(the container's log could not be read: {_short(exc)})"

    def _errors(self) -> str:
        """Return the error lines of the container's whole log (Triton's E-lines), for a failed start."""
        lines = self.log_tail(100000).splitlines()
        errors = [line for line in lines if line.startswith("E") or "error:" in line.lower()][:10]
        return "errors:\n" + "\n".join(errors) + "\n…\n" if errors else ""

    def _ensure_image(self) -> None:
        import docker  # noqa: PLC0415

        image = LOCAL_IMAGE if self.options.local else self.options.image
        try:
            self.client.images.get(image)
            return
        except docker.errors.ImageNotFound:
            pass
        if self.options.local:
            repository, tag = LOCAL_IMAGE.split(":")
            self.client.api.import_image_from_data(local_image_tar(), repository=repository, tag=tag)
            return
        if not self.options.pull:
            raise DockerUnavailable(f"the image {image} is not on this machine (and TBL_DOCKER_PULL=0)")
        try:
            self.client.images.pull(image)
        except Exception as exc:  # noqa: BLE001 - no registry reachable, or no such image
            raise DockerUnavailable(f"the image {image} is not on this machine and could not be pulled "
                                    f"({_short(exc)}); pull or load it where a registry is reachable, or use "
                                    "TBL_DOCKER_IMAGE=local (the lab's CPU image)") from exc

    def _remove_stale(self, name: str) -> None:
        """Remove a container of that name left by an earlier lab process that is gone (never another's)."""
        import docker  # noqa: PLC0415

        try:
            old = self.client.containers.get(name)
        except docker.errors.NotFound:
            return
        owner = (old.labels or {}).get(LABEL)
        if owner is None or _alive(int(owner)):
            raise ServerStartError(f"a container named {name} already exists and is not a leftover of this lab; "
                                   "remove it or choose other ports")
        old.remove(force=True)

    def _problem(self) -> str | None:
        """Return why the container cannot become ready any more (None while it still may); PortTaken when another
        process bound one of its ports first (host network)."""
        if self.running():
            return None
        tail = self.log_tail(20)
        raise_if_port_taken(tail, "the Triton container")
        return f"the Triton container stopped.\n{self._errors()}{tail}"

    def _answers(self, url: str) -> bool:
        """Return False when another process listens on url's port (True when it is the container's, or cannot be
        told: published ports are held by Docker's proxy)."""
        if self.options.network != "host" or self.container is None:
            return True
        holder = listener_pid(urlsplit(url).port)
        return holder is None or descends_from(holder, int(self.container.attrs.get("State", {}).get("Pid") or 0))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "…"


_live: set[DockerServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_live):
        server.stop(timeout_s=5)
