"""Which --model-control-mode a Triton server runs with, found without changing anything, and whether the lab can apply.

explicit: the load API reloads a model with a new config. poll: the load API is refused, but the server reloads a
changed config.pbtxt at its next poll, so the lab applies by writing the file it serves. none (Triton's default):
models load at start only; no change takes effect before a restart.
"""
from __future__ import annotations

import ipaddress
import json
import os
import socket
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from app.server.control_key import LOCKED_FIX, is_locked
from app.server.endpoint import Endpoint
from app.server.server_process import ServerFlags, listener_pid, read_flags

EXPLICIT, POLL, NONE, UNKNOWN = "explicit", "poll", "none", "unknown"
MODES = (EXPLICIT, POLL, NONE)
TRITON_DEFAULT_POLL_S = 15.0  # --repository-poll-secs when the flag is absent
PROBE_TIMEOUT_S = 2.0
REFUSAL = "polling is enabled"  # 2.51 refuses loads with this text in modes none and poll alike (HTTP 503)

FIX = ("restart it with --model-control-mode=explicit; or, if it runs with --model-control-mode=poll on a repository "
       "this machine can write, set TRITON_MODEL_CONTROL_MODE=poll, TRITON_MODEL_REPOSITORY=<that folder> and "
       "TRITON_REPOSITORY_POLL_SECS=<its --repository-poll-secs>")


@dataclass(frozen=True)
class ControlMode:
    """How a server's models can be changed, how that was found, and what stops the lab (with the fix)."""

    mode: str  # explicit | poll | none | unknown
    how: str
    poll_s: float | None = None
    repository: Path | None = None  # the folder the server serves (and the lab writes), when known
    why_not: str | None = None  # None: the lab can apply
    warning: str | None = None  # true but not blocking (e.g. the folder given is not the one served)
    pid: int | None = None  # the server's process, when it was read

    @property
    def can_apply(self) -> bool:
        """Return True when an Apply can take effect on this server."""
        return self.why_not is None

    @property
    def applies_by_file(self) -> bool:
        """Return True when an Apply is a write of config.pbtxt followed by a wait for the server's poll."""
        return self.mode == POLL and self.can_apply


@dataclass(frozen=True)
class Probe:
    """What the server answered to an unload of a model that cannot exist: open, refused, locked, other or dead."""

    answer: str
    text: str


def probe_load_api(endpoint: Endpoint, timeout_s: float = PROBE_TIMEOUT_S) -> Probe:
    """Ask to unload a random, absent model: 200 in explicit mode, refused in none/poll, changing nothing; with the
    endpoint's control key (a locked server checks the key first: without it, "locked" whatever the mode)."""
    name = f"tbl-probe-{uuid.uuid4().hex}"
    request = urllib.request.Request(f"{endpoint.http_url.rstrip('/')}/v2/repository/models/{name}/unload",
                                     data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json", **endpoint.control_headers})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            return Probe("open", f"HTTP {reply.status}")
    except urllib.error.HTTPError as exc:
        text = _error_text(exc)
        answer = "refused" if REFUSAL in text else "locked" if is_locked(text) else "other"
        return Probe(answer, f"HTTP {exc.code}: {text}")
    except (OSError, ValueError) as exc:
        return Probe("dead", f"{type(exc).__name__}: {exc}")


def detect(endpoint: Endpoint, repo: Path | None = None, environ=os.environ, *, proc: Path = Path("/proc"),
           timeout_s: float = PROBE_TIMEOUT_S) -> ControlMode:
    """Return the server's control mode: probe the load API, then read the local process's flags, then the
    TRITON_MODEL_CONTROL_MODE / TRITON_REPOSITORY_POLL_SECS variables; never raises on a dead server."""
    url = endpoint.http_url
    probe = probe_load_api(endpoint, timeout_s)
    if probe.answer == "dead":
        return ControlMode(UNKNOWN, f"the load API probe got no answer ({probe.text})",
                           why_not=f"the server at {url} does not answer ({probe.text}): start it, or fix TRITON_URL")
    if probe.answer == "locked":
        given = "the key the lab sent was refused" if endpoint.control_key else "the lab sent no key"
        return ControlMode(UNKNOWN, f"the load API probe answered {probe.text}",
                           why_not=f"the server at {url} wants a key for its model-repository API and {given}: "
                                   f"{LOCKED_FIX}")
    if probe.answer == "other":
        return ControlMode(UNKNOWN, f"the load API probe answered {probe.text}",
                           why_not=f"the server at {url} answered the load API with {probe.text[:200]}: the lab "
                                   "cannot tell whether it may load models (a proxy in front of Triton?); " + FIX)
    try:
        flags, unread = _local_flags(endpoint, proc)
    except Exception as exc:  # noqa: BLE001 - an odd /proc is a reason to fall back, never a crash
        flags, unread = None, f"the server's process could not be read ({type(exc).__name__}: {exc})"
    env_mode, env_poll, env_problem = _environ(environ)
    if probe.answer == "open":
        how = "the load API accepts loads (unloading an absent model answered 200): --model-control-mode=explicit"
        if env_mode and env_mode != EXPLICIT:
            how += f"; TRITON_MODEL_CONTROL_MODE={env_mode} ignored"
        return _placed(ControlMode(EXPLICIT, how, pid=flags.pid if flags else None), flags, repo)
    refused = f"the load API refuses loads ({probe.text})"
    if flags is not None:
        mode = flags.control_mode or NONE
        shown = f"--model-control-mode={flags.control_mode}" if flags.control_mode else "no --model-control-mode " \
                                                                                        "(Triton's default: none)"
        how = f"{refused}; process {flags.pid}'s command line: {shown}"
        if mode not in (POLL, NONE):
            return ControlMode(UNKNOWN, how, pid=flags.pid,
                               why_not=f"the server refuses the load API although its command line says {shown}; "
                                       + FIX)
        poll_s = _poll_secs(flags.poll_secs) if mode == POLL else None
        if mode == POLL:
            how += f" --repository-poll-secs={flags.poll_secs}" if flags.poll_secs else \
                f" (no --repository-poll-secs: Triton's default, {TRITON_DEFAULT_POLL_S:g} s)"
        if env_mode and env_mode != mode:
            how += f"; TRITON_MODEL_CONTROL_MODE={env_mode} ignored"
        return _placed(ControlMode(mode, how, poll_s, pid=flags.pid), flags, repo)
    if env_problem:
        return ControlMode(UNKNOWN, f"{refused}; {unread}", why_not=env_problem)
    if env_mode is None:
        return ControlMode(UNKNOWN, f"{refused}; {unread}",
                           why_not="the server refuses the load API: it runs with --model-control-mode=none (Triton's "
                                   f"default) or poll, and the lab cannot tell which ({unread}); " + FIX)
    how = f"{refused}; TRITON_MODEL_CONTROL_MODE={env_mode} ({unread})"
    if env_mode == EXPLICIT:
        return ControlMode(UNKNOWN, how, why_not="TRITON_MODEL_CONTROL_MODE=explicit, but the server refuses the load "
                                                 "API: set the variable to what the server runs with, or " + FIX)
    poll_s = (env_poll or TRITON_DEFAULT_POLL_S) if env_mode == POLL else None
    if env_mode == POLL:
        how += f"; polls every {poll_s:g} s" + ("" if env_poll else
                                               " (no TRITON_REPOSITORY_POLL_SECS: Triton's default)")
    return _placed(ControlMode(env_mode, how, poll_s), None, repo)


def _placed(mode: ControlMode, flags: ServerFlags | None, repo: Path | None) -> ControlMode:
    """Add the repository (given, or the one the command line names) and what stops an Apply in this mode."""
    served = flags.repositories if flags is not None else ()
    chosen, warning = _repository(served, repo)
    why = None
    if mode.mode == NONE:
        why = ("the server runs with --model-control-mode=none (Triton's default): it loads models only at start and "
               "refuses the load API, so no change takes effect before a restart; restart it with "
               "--model-control-mode=explicit (or =poll --repository-poll-secs=N, with TRITON_MODEL_REPOSITORY set "
               "to the folder it serves)")
    elif mode.mode == POLL:
        why, warning = _poll_blocker(served, repo, chosen), None  # a mismatch blocks here: said once, in why
    elif mode.mode == EXPLICIT and chosen is not None and not _writable(chosen):
        warning = f"the lab cannot write {chosen}: changes will serve but last only until the server restarts"
    return ControlMode(mode.mode, mode.how, mode.poll_s, chosen, why, warning, mode.pid)


def _repository(served: tuple[Path, ...], repo: Path | None) -> tuple[Path | None, str | None]:
    """Return the folder the lab writes (the given one, else the only one served) and a warning on a mismatch."""
    if repo is not None:
        if served and not any(_same(repo, s) for s in served):
            listed = ", ".join(str(s) for s in served)
            return Path(repo), f"TRITON_MODEL_REPOSITORY is {repo}, but the server serves {listed}"
        return Path(repo), None
    local = [s for s in served if "://" not in str(s)]
    return (local[0], None) if len(served) == 1 and local else (None, None)


def _poll_blocker(served: tuple[Path, ...], repo: Path | None, chosen: Path | None) -> str | None:
    """Return why a write of config.pbtxt would not reach a polling server (None when it will)."""
    listed = ", ".join(str(s) for s in served)
    if repo is not None and served and not any(_same(repo, s) for s in served):
        return f"TRITON_MODEL_REPOSITORY is {repo}, but the server polls {listed}: set it to the folder it polls"
    if chosen is None:
        if len(served) > 1:
            return (f"the server polls several repositories ({listed}): set TRITON_MODEL_REPOSITORY to the one "
                    "holding the models to tune")
        if served:
            return f"the server polls {listed}, which this machine cannot write: serve a local folder, or " + FIX
        return ("the server polls a repository the lab does not know: set TRITON_MODEL_REPOSITORY to that folder "
                "(mounted on this machine)")
    if not chosen.is_dir():
        return (f"the repository {chosen} is not a folder on this machine: set TRITON_MODEL_REPOSITORY to the one "
                "it polls")
    if not _writable(chosen):
        return f"the lab cannot write the repository {chosen}: give this user write access to its model folders"
    return None


def _local_flags(endpoint: Endpoint, proc: Path) -> tuple[ServerFlags | None, str]:
    """Return the flags of the tritonserver behind the endpoint when it runs here and may be read, else why not."""
    parsed = urlparse(endpoint.http_url)
    host = parsed.hostname or ""
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    if not _is_local(host):
        return None, f"{host} is not this machine, so its process cannot be read"
    if not (proc / "net" / "tcp").exists():
        return None, "this system has no /proc to find the server's process in"
    pid = listener_pid(port, proc)
    if pid is None:
        return None, f"no process this user may read listens on port {port} (another user's, or in a container)"
    flags = read_flags(pid, proc)
    if flags is None:
        return None, f"process {pid} listens on port {port}, but its command line cannot be read"
    if not flags.is_tritonserver:
        return None, f"port {port} belongs to process {pid} ({Path(flags.program).name}), not tritonserver " \
                     "(a proxy or a container's port forward?)"
    return flags, ""


def _environ(environ) -> tuple[str | None, float | None, str | None]:
    """Return (TRITON_MODEL_CONTROL_MODE, TRITON_REPOSITORY_POLL_SECS, the problem with either)."""
    mode = (environ.get("TRITON_MODEL_CONTROL_MODE") or "").strip().lower() or None
    if mode is not None and mode not in MODES:
        return None, None, f"TRITON_MODEL_CONTROL_MODE must be none, poll or explicit, got {mode!r}: fix the variable"
    raw = (environ.get("TRITON_REPOSITORY_POLL_SECS") or "").strip()
    if not raw:
        return mode, None, None
    secs = _poll_secs(raw, default=None)
    if secs is None:
        return mode, None, f"TRITON_REPOSITORY_POLL_SECS must be a number of seconds above 0, got {raw!r}: fix it"
    return mode, secs, None


def _poll_secs(raw: str | None, default: float | None = TRITON_DEFAULT_POLL_S) -> float | None:
    try:
        value = float(raw) if raw else None
    except ValueError:
        return default
    return value if value is not None and value > 0 else default


def _is_local(host: str) -> bool:
    """Return True when host is a loopback address, localhost, or an address of this machine."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except (OSError, UnicodeError):
        return False
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if ip.is_loopback or ip.is_unspecified or _bindable(str(ip), ip.version):
            return True
    return False


def _bindable(address: str, version: int) -> bool:
    """Return True when address belongs to one of this machine's interfaces (a socket can bind to it)."""
    with socket.socket(socket.AF_INET6 if version == 6 else socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((address, 0))
        except OSError:
            return False
    return True


def _same(a: Path, b: Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _writable(path: Path) -> bool:
    """Return True when the lab can write the repository's config files (the folder, or its model folders)."""
    path = Path(path)
    if not path.is_dir():
        return False
    if os.access(path, os.W_OK | os.X_OK):
        return True
    try:
        return any(os.access(sub, os.W_OK | os.X_OK) for sub in path.iterdir() if sub.is_dir())
    except OSError:
        return False


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode("utf-8", errors="replace")
    except OSError:
        body = ""
    try:
        text = json.loads(body).get("error", body)
    except (ValueError, AttributeError):
        text = body
    return " ".join(str(text or exc.reason).split())[:300]
