"""Apply a config: validate, hot-reload through the model control API, then persist and record it."""
from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tritonclient.http as triton_http
from tritonclient.utils import InferenceServerException

from app.config.caps import ServerCaps, server_caps
from app.config.contract import contract_changes, unservable
from app.config.errors import (
    ConfigError,
    ConfigRejectedError,
    ConfigRolledBackError,
    ConfigTimeoutError,
    ConfigValidationError,
    ContractChangeError,
    ServerQueryError,
    StaleConfigError,
    clean,
)
from app.config.history import (
    Action,
    ConfigHistory,
    Version,
    history_root,
    repository_key,
    unified_diff,
)
from app.config.model_config import (
    ModelConfig,
    copy_config,
    format_config,
    from_json,
    parse_config,
    to_json,
    write_text_atomic,
)
from app.config.validate import validate
from app.config.verify import SmokeFailure, answer_check, verify
from app.server.control import ControlError, ControlTimeout, ModelControl
from app.server.endpoint import Endpoint
from app.server.repository import model_dir


class ConfigPersistError(ConfigError):
    """The server took the new config but config.pbtxt could not be written."""


RESTORE_TIMEOUT_S = 120.0


def config_version(text: str) -> str:
    """Return a short fingerprint of a config text: what an apply was built from."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class ApplyResult:
    """What an apply changed and how long the reload took."""

    model: str
    old_text: str
    new_text: str
    diff: str
    seconds: float
    version_id: str
    persisted: bool
    verified: str = ""
    transport: str = ""  # the API the load went over: "grpc", or "http" when the server offers no gRPC
    replicas: tuple[str, ...] = ()  # a fleet apply: the other replicas that serve it too, in order

    @property
    def message(self) -> str:
        """Return a one-line summary for the UI."""
        where = "and wrote config.pbtxt" if self.persisted else "- not persisted: no local repository (remote server)"
        checked = f"; checked: {self.verified}" if self.verified else ""
        over = f" over {'gRPC' if self.transport == 'grpc' else 'HTTP'}" if self.transport else ""
        fleet = f"; then on replica{'s' if len(self.replicas) > 1 else ''} {', '.join(self.replicas)}, each checked" \
            if self.replicas else ""
        return f"reloaded {self.model}{over} in {self.seconds:.2f} s {where} (version {self.version_id}){checked}{fleet}"


class ConfigService:
    """Read, preview, apply, undo and roll back the configs of one server's models."""

    def __init__(self, endpoint: Endpoint, repo_path: Path | None, *, history: ConfigHistory | None = None,
                 caps: ServerCaps | None = None, clock: Callable[[], float] = time.perf_counter,
                 load_timeout_s: float = 45.0, server_log: Callable[[], str] | None = None,
                 config_name: str | None = None) -> None:
        self.endpoint = endpoint
        self.config_name = config_name  # the server's --model-config-name: configs/<name>.pbtxt wins when present
        self.repo = Path(repo_path).resolve() if repo_path is not None else None
        key = repository_key(self.repo) if self.repo else f"remote-{endpoint.host_port}"
        self.history_store = history or ConfigHistory(history_root(key))
        self._caps = caps
        self._clock = clock
        self._load_timeout_s = load_timeout_s
        self._server_log = server_log
        self._lock = threading.RLock()
        self.control = ModelControl(endpoint)  # loads over gRPC: an HTTP load stalls HTTP inference (see control.py)

    def retarget(self, endpoint: Endpoint) -> None:
        """Follow a server that came back on other ports (a restart)."""
        with self._lock:
            self.endpoint = endpoint
            self.control = ModelControl(endpoint)

    def caps(self) -> ServerCaps:
        """Return the caps validation uses (asked of the server unless given)."""
        return self._caps or server_caps(self.endpoint, self.repo)

    def current(self, model: str) -> ModelConfig:
        """Return the model's config: the file in the repository, or the live one when remote."""
        return parse_config(self.current_text(model), source=f"{model}/config.pbtxt")

    def current_text(self, model: str) -> str:
        """Return the text current() parses."""
        if self.repo is None:
            return format_config(self.live(model))
        return self.config_path(model).read_text()

    def config_path(self, model: str) -> Path:
        """Return the file the server loads: configs/<config_name>.pbtxt when it exists, else config.pbtxt (Triton's rule)."""
        folder = model_dir(self.repo, model)
        if self.config_name:
            custom = folder / "configs" / f"{self.config_name}.pbtxt"
            if custom.is_file():
                return custom
        return folder / "config.pbtxt"

    def live(self, model: str) -> ModelConfig:
        """Return the config the server is serving now (get_model_config), with Triton's defaults filled in."""
        try:
            return from_json(self._client().get_model_config(model))
        except InferenceServerException as exc:
            raise ServerQueryError(f"cannot read the live config of {model!r}: {exc}; is it loaded?") from exc

    def preview_diff(self, model: str, new: ModelConfig) -> str:
        """Return the unified diff between the current config and new ('' when equal)."""
        return unified_diff(self.current_text(model), format_config(self._named(model, new)),
                            f"{model}/config.pbtxt", "new")

    def apply(self, model: str, new: ModelConfig, note: str = "", *, base: str | None = None,
              confirm_contract: bool = False) -> ApplyResult:
        """Validate, check the contract, hot-reload, verify (rolling back on failure), then persist and record.

        base: config_version() of the text the change was built from; refused when another apply landed since.
        confirm_contract: the caller has shown the contract changes and the person confirmed them.
        """
        return self._apply(model, new, Action.APPLY, base=base, confirm=confirm_contract, note=note)

    def contract_preview(self, model: str, new: ModelConfig) -> list:
        """Return the contract changes new would make against the current config (shown before asking to confirm)."""
        return contract_changes(self.current(model), self._named(model, new))

    def undo_blocked(self, model: str) -> str | None:
        """Return why Undo cannot run now (None when it can)."""
        try:
            self.history_store.undo_target(model)
        except ConfigError as exc:
            return str(exc)
        return None

    def history(self, model: str) -> list[Version]:
        """Return the recorded versions of the model's config, oldest first."""
        return self.history_store.versions(model)

    def undo(self, model: str) -> ApplyResult:
        """Apply the version before the one serving (repeatable: each undo steps further back)."""
        with self._lock:
            self._baseline(model, self.current_text(model))
            target = self.history_store.undo_target(model)
            text = self.history_store.text(model, target.id)
            return self._apply(model, parse_config(text), Action.UNDO, confirm=True, restores=target.id)

    def rollback(self, model: str, version_id: str) -> ApplyResult:
        """Apply a recorded version again."""
        text = self.history_store.text(model, version_id)
        return self._apply(model, parse_config(text), Action.ROLLBACK, confirm=True, restores=version_id)

    def _apply(self, model: str, new: ModelConfig, action: Action, base: str | None = None, confirm: bool = False,
               **note) -> ApplyResult:
        new = self._named(model, new)
        validate(new, self.caps())
        refused = unservable(new)
        if refused:
            raise ConfigValidationError.of(refused)
        new_text = format_config(new)
        with self._lock:
            old_text = self.current_text(model)
            if base is not None and base != config_version(old_text):
                raise StaleConfigError(model, old_text)
            old = parse_config(old_text, source=f"{model}/config.pbtxt")
            changes = contract_changes(old, new)
            if changes and not confirm:
                raise ContractChangeError(model, changes)
            self._baseline(model, old_text)
            started = self._clock()
            self._load(model, new, old)
            seconds = self._clock() - started
            try:
                checked = verify(self.endpoint, model, new, answer_check(self.repo, model))
            except SmokeFailure as failure:
                raise ConfigRolledBackError(model, str(failure), self._restore(model, old)) from failure
            persisted = self._persist(model, new_text)
            if not persisted:  # remote: record what the server serves, so the next baseline matches it
                new_text = self.current_text(model)
            version = self.history_store.record(model, new_text, action, persisted=persisted, seconds=seconds, **note)
        diff = unified_diff(old_text, new_text, f"{model}/config.pbtxt (before)", f"{model}/config.pbtxt (after)")
        return ApplyResult(model, old_text, new_text, diff, seconds, version.id, persisted, checked,
                           self.control.transport.name)

    def _load(self, model: str, new: ModelConfig, old: ModelConfig) -> None:
        """Load new; when the server refuses or does not answer in time, make sure the old config serves."""
        try:
            self.control.load(model, to_json(new), self._load_timeout_s)
        except ControlTimeout as exc:  # a time-out or a dropped connection: the load may still run
            raise ConfigTimeoutError(model, f"the load did not answer within {self._load_timeout_s:g} s ({exc})",
                                     self._restore(model, old)) from exc
        except ControlError as exc:
            reason = self._reason(model, str(exc))
            raise ConfigRejectedError(model, reason, self._ensure_serving(model, old)) from exc

    def _ensure_serving(self, model: str, old: ModelConfig) -> str:
        """After a refused load: check that the old config serves; load it again when the model fell over."""
        try:
            verify(self.endpoint, model, old, answer_check(self.repo, model))
        except SmokeFailure as failure:
            return f"the failed load left it not serving ({failure}); " + self._restore(model, old)
        return "it keeps serving the old one (checked)"

    def _restore(self, model: str, old: ModelConfig) -> str:
        """Load the previous config again and check it; say what serves now."""
        try:  # a known-good config; it may have to wait for a load still running on the server
            self.control.load(model, to_json(old), max(self._load_timeout_s, RESTORE_TIMEOUT_S))
            checked = verify(self.endpoint, model, old, answer_check(self.repo, model))
        except ControlTimeout as exc:
            return f"restoring the previous config did not answer ({exc}): check the server"
        except (ControlError, SmokeFailure) as exc:
            return (f"the previous config could NOT be restored ({clean(str(exc))[:300]}): the model may be "
                    "unavailable — see the server log, fix the config, and apply it or restart the server")
        except Exception as exc:  # noqa: BLE001 - reported, never raised from inside a failure report
            return f"restoring the previous config did not answer ({exc}): check the server"
        return f"the previous config was restored and serves ({checked})"

    def _persist(self, model: str, text: str) -> bool:
        if self.repo is None:
            return False
        path = self.config_path(model)
        try:
            write_text_atomic(path, text)
        except OSError as exc:
            raise ConfigPersistError(
                f"the server now serves the new config of {model!r} but {path} could not be written: {exc}; "
                "free the disk or fix permissions, then apply again"
            ) from exc
        return True

    def _baseline(self, model: str, text: str) -> None:
        """Record the serving text first when the history does not end with it (first use, outside edits)."""
        stack = self.history_store.stack(model)
        if not stack or self.history_store.text(model, stack[-1].id) != text:
            self.history_store.record(model, text, Action.BASELINE, persisted=self.repo is not None)

    def _reason(self, model: str, message: str) -> str:
        """Add the log line that says why, when the API only says "failed to poll" (2.51 does)."""
        message = message.strip().rstrip(";")
        if self._server_log is None or "failed to poll" not in message:
            return message
        marker = f"Poll failed for model directory '{model}': "
        lines = [line for line in self._server_log().splitlines() if marker in line]
        return lines[-1].split(marker, 1)[1].rstrip('"') if lines else message

    @staticmethod
    def _named(model: str, config: ModelConfig) -> ModelConfig:
        if config.name and config.name != model:
            raise ConfigValidationError("name", f"is {config.name!r} but the config is applied to {model!r}; "
                                        f"set name to {model!r}")
        if config.name:
            return config
        named = copy_config(config)
        named.name = model
        return named

    def _client(self, timeout_s: float = 30.0) -> triton_http.InferenceServerClient:
        # A fresh client per call: tritonclient.http clients are not safe to share across threads.
        url = self.endpoint.host_port
        return triton_http.InferenceServerClient(url, network_timeout=timeout_s,
                                                 ssl=self.endpoint.http_url.startswith("https"))
