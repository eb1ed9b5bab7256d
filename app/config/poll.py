"""Apply on a server in poll mode: after config.pbtxt is written, wait until the server serves what it says.

Measured on tritonserver 2.51 (bench/config_serve_time.py), a Python model, 2 busy cores: a changed config serves
1.6 / 2.1 / 2.8 s (min / median / max of 15) after the write with --repository-poll-secs=1, and 2.8 / 3.1 / 4.1 s
with 2: up to one poll interval, then ~1.3 s to load the new version beside the old one. A config the server cannot
load leaves a serving model as it was: the old config keeps serving, READY, with no reason in the repository index;
only the server log says why ("Poll failed for model directory 'M': ..." for a file it cannot parse, "failed to
load 'M' version N: ..." for one it cannot load), and the server tries again at every poll. A model that was not
serving turns UNAVAILABLE with the new reason.
"""
from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from app.config.errors import ConfigError, ConfigRejectedError, clean
from app.config.model_config import ModelConfig, from_json
from app.server.control_mode import TRITON_DEFAULT_POLL_S
from app.server.endpoint import Endpoint

INTERVAL_S = 0.2
REQUEST_TIMEOUT_S = 2.0
LOAD_ALLOWANCE_S = 45.0  # what an explicit-mode Apply allows a load (ConfigService's load_timeout_s)


@dataclass(frozen=True)
class Served:
    """One look at a model: its served config (None when it could not be read), state and Triton's reason."""

    config: ModelConfig | None
    state: str
    reason: str = ""
    error: str = ""


class PollRejectedError(ConfigRejectedError):
    """The polling server could not load the written config; `reason` is Triton's (index or log)."""

    def __init__(self, model: str, reason: str, serving: str) -> None:
        self.reason = clean(reason)
        super().__init__(model, reason, serving)


class PollTimeoutError(ConfigError):
    """The served config did not show the change in time: no poll reloaded it (or the reload failed silently)."""

    def __init__(self, model: str, timeout_s: float, last: Served) -> None:
        self.model, self.timeout_s, self.last = model, timeout_s, last
        now = f"{last.state}" + (f": {clean(last.reason)}" if last.reason else "") + \
            (f"; last read failed: {clean(last.error)}" if last.error else "")
        super().__init__(
            f"the server did not reload {model!r} within {timeout_s:g} s: the served config does not show the change "
            f"(the model is {now}). A server in poll mode keeps serving the old config when the new one fails to load "
            "and says why only in its log ('Poll failed for model directory' or 'failed to load'); a server in mode "
            "none never reloads")


def served_timeout_s(poll_s: float | None, load_s: float = LOAD_ALLOWANCE_S) -> float:
    """Return how long to wait for a written config: two polls (one may just have passed) and a load."""
    return 2 * (poll_s or TRITON_DEFAULT_POLL_S) + load_s


def wait_until_served(endpoint: Endpoint, model: str, check: Callable[[ModelConfig], bool], timeout_s: float, *,
                      clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                      log: Callable[[], str] | None = None, interval_s: float = INTERVAL_S,
                      look: Callable[[Endpoint, str], Served] | None = None, before: Served | None = None,
                      seen_log: str | None = None) -> ModelConfig:
    """Return the served config once check(served) holds.

    PollRejectedError when the model turns UNAVAILABLE (or, given the server's log, when a new line says the load
    failed); PollTimeoutError when timeout_s passes first. `before` (look_at) and `seen_log` (log()) taken before
    the file was written make a failure that lands before the first look count too.
    """
    look = look or look_at
    deadline = clock() + timeout_s
    current = look(endpoint, model)
    first = before or current
    seen = set(failures(seen_log if seen_log is not None else log(), model)) if log is not None else set()
    while True:
        if current.config is not None and check(current.config):
            return current.config
        if current.state == "UNAVAILABLE" and (current.state, current.reason) != (first.state, first.reason):
            raise PollRejectedError(model, current.reason or "UNAVAILABLE, no reason given",
                                    "the model is UNAVAILABLE: nothing serves it")
        if log is not None:
            new = [line for line in failures(log(), model) if line not in seen]
            if new:
                serving = "it keeps serving the old config" if current.state == "READY" else \
                    f"the model is {current.state}"
                raise PollRejectedError(model, _reason(new[-1], model), serving)
        if clock() >= deadline:
            raise PollTimeoutError(model, timeout_s, current)
        sleep(interval_s)
        current = look(endpoint, model)


def look_at(endpoint: Endpoint, model: str) -> Served:
    """Return the model's served config, state and reason; read failures become the Served's error."""
    base = endpoint.http_url.rstrip("/")
    config, error = None, ""
    try:
        config = from_json(_json(f"{base}/v2/models/{quote(model, safe='')}/config"))
    except (OSError, ValueError, ConfigError) as exc:
        error = _describe(exc)
    try:
        entries = [e for e in _json(f"{base}/v2/repository/index", b"{}", endpoint.control_headers)
                   if e.get("name") == model]
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        return Served(config, "UNKNOWN", "", error or _describe(exc))
    if not entries:
        return Served(config, "ABSENT", "the repository index does not list it", error)
    ready = [e for e in entries if e.get("state") == "READY"]
    if ready:
        return Served(config, "READY", "", error)
    states = sorted({e.get("state") or "NOT LOADED" for e in entries})
    reasons = "; ".join(sorted({e["reason"] for e in entries if e.get("reason")}))
    return Served(config, "/".join(states), reasons, error)


_FAILURE = ("Poll failed for model directory '{m}':", "failed to load '{m}' version ")


def failures(log_text: str, model: str) -> list[str]:
    """Return the server log's lines that say a (re)load of model failed, in order; a parse failure carries the
    protobuf line before it, which names the line and column."""
    marks = [pattern.format(m=model) for pattern in _FAILURE]
    out, before = [], ""
    for line in log_text.splitlines():
        if any(mark in line for mark in marks):
            parse = before.split("] ", 1)[-1] if "Error parsing text-format" in before else ""
            out.append(f"{line} ({parse})" if parse else line)
        before = line
    return out


def _reason(line: str, model: str) -> str:
    """Return the reason part of a failure line (what follows the model's name and a colon)."""
    match = re.search(rf"'{re.escape(model)}'(?: version \d+)?: (.*?)\"?( \(.*\))?$", line)
    if match:
        return match.group(1) + (match.group(2) or "")
    return line


def _json(url: str, body: bytes | None = None, headers: dict[str, str] | None = None):
    sent = {**({"Content-Type": "application/json"} if body else {}), **(headers or {})}
    request = urllib.request.Request(url, data=body, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as reply:
            return json.loads(reply.read() or b"null")
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", errors="replace")
        raise OSError(f"HTTP {exc.code}: {text[:300]}") from exc


def _describe(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
