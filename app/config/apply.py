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
from app.config.ensembles import ensembles_using, steps_of, step_breaks
from app.config.errors import (
    ConfigError,
    ConfigRejectedError,
    ConfigRolledBackError,
    ConfigTimeoutError,
    ConfigValidationError,
    ContractChangeError,
    HistoryError,
    UnrecordedError,
    ServerQueryError,
    StaleConfigError,
    clean,
)
from app.config.history import (
    Action,
    ConfigHistory,
    HistoryProblem,
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
from app.config.read import settings_of
from app.config.rebase import rebase
from app.config.text_edit import TextEditError, patch_text
from app.config.validate import validate
from app.config.verify import SmokeFailure, answer_check, verify
from app.server.control import ControlDisabled, ControlError, ControlTimeout, ModelControl
from app.server.endpoint import Endpoint
from app.server.repository import model_dir
from app.server.status import fetch_status
from app.text_limits import config_size_problem


class ConfigPersistError(ConfigError):
    """The server took the new config but config.pbtxt could not be written."""


class ControlDisabledError(ConfigError):
    """The server cannot take a config from the lab (its load API is off and no repository is reachable)."""


RESTORE_TIMEOUT_S = 120.0
WRITTEN_HEADER = ("# Written by Triton Batching Lab: the config Triton served for this model (it had no config.pbtxt,\n"
                  "# Triton auto-completed it), with the change applied. Edit it freely.\n")


@dataclass(frozen=True)
class ApplyPlan:
    """What applying a proposed config loads and writes: only the fields the change edits, the user's text kept."""

    model: str
    config: ModelConfig  # what the server is asked to load: the file's own config with the change
    effective: ModelConfig  # what it will serve (validation and the contract are judged on it)
    old_text: str  # config.pbtxt now; '' when the model has none
    text: str  # config.pbtxt after the Apply
    diff: str  # '' when nothing changes
    new_file: bool = False  # the model had no config.pbtxt: the Apply writes a complete one
    canonical: bool = False  # the file could not be edited in place: it is written in text_format's layout


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
    transport: str = ""  # the API the load went over: "grpc", "http", or "poll" (the server read the file)
    replicas: tuple[str, ...] = ()  # a fleet apply: the other replicas that serve it too, in order
    new_file: bool = False  # the model had no config.pbtxt: a complete one was written
    canonical: bool = False  # the file could not be edited in place and was rewritten in text_format's layout
    removed_file: bool = False  # an undo back to a model without config.pbtxt: the file was removed
    contract: tuple[str, ...] = ()  # what changed for the model's clients (confirmed): traffic must follow it

    @property
    def message(self) -> str:
        """Return a one-line summary for the UI."""
        if not self.persisted:
            where = ("- not written anywhere: the lab cannot reach the server's repository, so the change lasts "
                     "until the server restarts (download the config.pbtxt to keep it)")
        elif self.removed_file:
            where = "and removed config.pbtxt (the model had none: Triton auto-completes its config again)"
        elif self.new_file:
            where = ("and wrote a complete config.pbtxt (the model had none: it holds the config Triton "
                     "auto-completed, with this change)")
        elif self.canonical:
            where = "and rewrote config.pbtxt in canonical form (it could not be edited in place)"
        else:
            where = "and edited config.pbtxt (only the changed fields; comments and layout kept)"
        checked = f"; checked: {self.verified}" if self.verified else ""
        over = {"grpc": " over gRPC", "http": " over HTTP", "poll": " by the server's repository poll"}.get(
            self.transport, "")
        fleet = f"; then on replica{'s' if len(self.replicas) > 1 else ''} {', '.join(self.replicas)}, each checked" \
            if self.replicas else ""
        return f"reloaded {self.model}{over} in {self.seconds:.2f} s {where} (version {self.version_id}){checked}{fleet}"


def plan_change(proposed: ModelConfig, served: ModelConfig, file_text: str | None, writes: bool) -> ApplyPlan:
    """Return what applying proposed (the served config with some fields changed, named) would load and write: the
    model's own config.pbtxt (file_text) with exactly the changed fields edited in place, or a complete file when it
    has none (writes: the lab writes the repository; else nothing is written and the text is the served config)."""
    model = proposed.name
    if file_text is None:  # no file (or no repository): the complete config, as served, with the change
        old_text = "" if writes else format_config(served)
        text = (WRITTEN_HEADER if writes else "") + format_config(proposed)
        if proposed == served:
            text = old_text
        return ApplyPlan(model, proposed, proposed, old_text, text, config_diff(model, old_text, text),
                         new_file=writes and text != old_text)
    written = parse_config(file_text, source=f"{model}/config.pbtxt")
    if written.name and written.name != model:
        raise ConfigValidationError("name", f"is {written.name!r} but the config is applied to {model!r}; "
                                    f"set name to {model!r}")
    named = copy_config(written)
    named.name = model
    new = rebase(named, served, proposed)
    to_write = new
    if not written.name:  # Triton takes the folder's name: a file that leaves it out keeps leaving it out
        to_write = copy_config(new)
        to_write.ClearField("name")
    canonical = False
    try:
        text = patch_text(file_text, to_write)
    except TextEditError:
        text, canonical = format_config(to_write), True
    return ApplyPlan(model, new, proposed, file_text, text, config_diff(model, file_text, text), canonical=canonical)


def config_diff(model: str, old: str, new: str) -> str:
    """Return the unified diff of a model's config.pbtxt ('' when nothing changes)."""
    return unified_diff(old, new, f"{model}/config.pbtxt" + ("" if old else " (none)"), f"{model}/config.pbtxt (new)")


class ConfigService:
    """Read, preview, apply, undo and roll back the configs of one server's models.

    The base of every change is the config the server serves (GET /v2/models/M/config, Triton's defaults and
    auto-completion filled in). What is written is the user's own config.pbtxt with only the changed fields
    edited; a model without a config.pbtxt gets a complete one on its first Apply.
    """

    def __init__(self, endpoint: Endpoint, repo_path: Path | None, *, history: ConfigHistory | None = None,
                 caps: ServerCaps | None = None, clock: Callable[[], float] = time.perf_counter,
                 load_timeout_s: float = 45.0, server_log: Callable[[], str] | None = None,
                 config_name: str | None = None, mode: str = "explicit", why_not: str = "",
                 poll_wait=None) -> None:
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
        # How configs reach the server: "explicit" (the load API), "poll" (write config.pbtxt, the server reloads
        # it at its next poll; poll_wait(model, check, timeout_s) waits for it), or "none"/"unknown" (nothing can:
        # why_not says why and how to change it).
        self.mode, self.why_not, self.poll_wait = mode, why_not, poll_wait

    def retarget(self, endpoint: Endpoint) -> None:
        """Follow a server that came back on other ports (a restart)."""
        with self._lock:
            self.endpoint = endpoint
            self.control = ModelControl(endpoint)

    def caps(self) -> ServerCaps:
        """Return the caps validation uses (asked of the server unless given)."""
        return self._caps or server_caps(self.endpoint, self.repo)

    def apply_blocked(self) -> str | None:
        """Return why no Apply can reach this server (None when one can)."""
        if self.mode == "explicit" or (self.mode == "poll" and self.repo is not None):
            return None
        if self.mode == "poll":
            return ("the server reloads configs by polling its repository, but the lab cannot reach that folder: "
                    "set TRITON_MODEL_REPOSITORY to it, or restart the server with --model-control-mode=explicit")
        return self.why_not or ("the server refuses the load API (--model-control-mode none or poll): restart it with "
                                "--model-control-mode=explicit")

    def current(self, model: str) -> ModelConfig:
        """Return the config the model serves; its config.pbtxt when it is not loaded (so a broken one can be fixed)."""
        try:
            return self.live(model)
        except ServerQueryError:
            text = self.file_text(model)
            if text is None:
                raise
            return self._named(model, parse_config(text, source=f"{model}/config.pbtxt"))

    def current_text(self, model: str) -> str:
        """Return the text that makes the model serve what it serves: its config.pbtxt, else the served config."""
        text = self.file_text(model)
        return text if text is not None else format_config(self.live(model))

    def file_text(self, model: str) -> str | None:
        """Return the model's config.pbtxt (or configs/<name>.pbtxt); None without one or without a repository."""
        if self.repo is None:
            return None
        path = self.config_path(model)
        return path.read_text() if path.is_file() else None

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

    def plan(self, model: str, proposed: ModelConfig) -> ApplyPlan:
        """Return what applying `proposed` (the served config with some fields changed) would load and write."""
        return plan_change(self._named(model, proposed), self.current(model), self.file_text(model),
                           writes=self.repo is not None)

    def preview_diff(self, model: str, new: ModelConfig) -> str:
        """Return the unified diff config.pbtxt would get from applying new ('' when nothing changes)."""
        return self.plan(model, new).diff

    def text_preview(self, model: str, text: str) -> tuple[ModelConfig, str, list]:
        """Return (what it would serve, the diff, the contract changes) of a whole config.pbtxt text typed in the
        editor."""
        if (too_large := config_size_problem(text)) is not None:
            raise ConfigValidationError("config.pbtxt", too_large)
        config = self._named(model, parse_config(text, source="the edited config"))
        old = self.file_text(model)
        old = old if old is not None else ("" if self.repo is not None else format_config(self.live(model)))
        effective = self._effective(model, config, text)
        return effective, self._diff(model, old, text), contract_changes(self.current(model), effective)

    def apply(self, model: str, new: ModelConfig, note: str = "", *, base: str | None = None,
              confirm_contract: bool = False) -> ApplyResult:
        """Apply a proposed config (the served one with the fields the caller changed): validate, check the contract,
        reload, verify (rolling back on failure), then edit config.pbtxt and record it.

        base: config_version() of the text the change was built from; refused when another apply landed since.
        confirm_contract: the caller has shown the contract changes and the person confirmed them.
        """
        plan = self.plan(model, new)
        return self._apply(model, plan.config, plan.text, Action.APPLY, base=base, confirm=confirm_contract,
                           effective=plan.effective, new_file=plan.new_file, canonical=plan.canonical, exact=True,
                           note=note)

    def apply_text(self, model: str, text: str, note: str = "", *, base: str | None = None,
                   confirm_contract: bool = False) -> ApplyResult:
        """Apply a whole config.pbtxt text (the raw editor, a study going back to its start): written as given."""
        if (too_large := config_size_problem(text)) is not None:
            raise ConfigValidationError("config.pbtxt", too_large)
        config = self._named(model, parse_config(text, source="the config text"))
        return self._apply(model, config, text, Action.APPLY, base=base, confirm=confirm_contract,
                           effective=self._effective(model, config, text), note=note)

    def contract_preview(self, model: str, new: ModelConfig) -> list:
        """Return the contract changes new would make against what serves (shown before asking to confirm)."""
        return contract_changes(self.current(model), self._named(model, new))

    def undo_blocked(self, model: str) -> str | None:
        """Return why Undo cannot run now (None when it can)."""
        try:  # the history skips versions it cannot read and turns disk errors into HistoryError (a ConfigError)
            self.history_store.undo_target(model)
        except ConfigError as exc:
            return str(exc)
        return None

    def history(self, model: str) -> list[Version]:
        """Return the recorded versions of the model's config, oldest first (unreadable ones skipped)."""
        return self.history_store.versions(model)

    def history_problems(self, model: str) -> list[HistoryProblem]:
        """Return the stored versions of the model's config that were skipped (incomplete or unreadable)."""
        return self.history_store.problems(model)

    def undo(self, model: str) -> ApplyResult:
        """Apply the version before the one serving (repeatable: each undo steps further back)."""
        with self._lock:
            self._baseline(model)
            target = self.history_store.undo_target(model)
            return self._restore_version(model, target, Action.UNDO)

    def rollback(self, model: str, version_id: str) -> ApplyResult:
        """Apply a recorded version again."""
        return self._restore_version(model, self.history_store.get(model, version_id), Action.ROLLBACK)

    def _restore_version(self, model: str, version: Version, action: Action) -> ApplyResult:
        text = self.history_store.text(model, version.id)
        if version.no_file:  # back to no config.pbtxt: remove it, Triton auto-completes again
            return self._apply(model, None, "", action, confirm=True, restores=version.id)
        config = self._named(model, parse_config(text, source=f"version {version.id}"))
        return self._apply(model, config, text, action, confirm=True, effective=self._effective(model, config, text),
                           restores=version.id)

    def _apply(self, model: str, new: ModelConfig | None, new_text: str, action: Action, base: str | None = None,
               confirm: bool = False, effective: ModelConfig | None = None, new_file: bool = False,
               canonical: bool = False, exact: bool = False, **note) -> ApplyResult:
        """new None: the model goes back to having no config.pbtxt (loaded from its folder, auto-completed)."""
        blocked = self.apply_blocked()
        if blocked:
            raise ControlDisabledError(f"nothing was applied to {model!r}: {blocked}")
        effective = effective if effective is not None else new
        if effective is not None:
            validate(effective, self.caps())
            refused = unservable(effective) + self._ensemble_breaks(model, effective)
            if refused:
                raise ConfigValidationError.of(refused)
        with self._lock:
            old_text = self.current_text(model)
            if base is not None and base != config_version(old_text):
                raise StaleConfigError(model, old_text)
            old = self.current(model)
            changes = contract_changes(old, effective) if effective is not None else []
            if changes and not confirm:
                raise ContractChangeError(model, changes)
            had_file = self.file_text(model) is not None
            self._baseline(model)
            started = self._clock()
            if self.mode == "poll":
                checked, persisted = self._by_poll(model, effective, new_text, old, exact), True
                seconds = self._clock() - started
            else:
                checked = self._by_load(model, new, effective, old)
                seconds = self._clock() - started
                persisted = self._persist(model, new_text if new is not None else None)
            if not persisted:  # remote: record what the server serves, so the next baseline matches it
                new_text = self.current_text(model)
            try:
                version = self.history_store.record(model, new_text, action, persisted=persisted, seconds=seconds,
                                                    no_file=new is None, **note)
            except HistoryError as exc:  # the server serves the change already: say so, not just "not recorded"
                raise UnrecordedError(f"{model!r} now serves the new config, but {exc}; Undo cannot step back over "
                                      "this change") from exc
        diff = self._diff(model, old_text if had_file or self.repo is None else "", new_text)
        return ApplyResult(model, old_text, new_text, diff, seconds, version.id, persisted, checked,
                           "poll" if self.mode == "poll" else self.control.transport.name, new_file=new_file,
                           canonical=canonical, removed_file=new is None and had_file,
                           contract=tuple(str(c) for c in changes))

    def _by_load(self, model: str, new: ModelConfig | None, effective: ModelConfig | None, old: ModelConfig) -> str:
        """Explicit mode: load over the API, verify, roll back on failure; return what was checked.

        new None: the model's config.pbtxt goes away first, since a load without a config reads the folder.
        """
        kept = self.file_text(model) if new is None else None
        if new is None:
            self._persist(model, None)
        try:
            self._load(model, new, old)
            try:
                return self._verify(model, self._served_or(model, effective))
            except SmokeFailure as failure:
                raise ConfigRolledBackError(model, str(failure), self._restore(model, old)) from failure
        except ConfigError:
            if kept is not None:
                self._persist(model, kept)
            raise

    def _load(self, model: str, new: ModelConfig | None, old: ModelConfig) -> None:
        """Load new; when the server refuses or does not answer in time, make sure the old config serves."""
        try:
            self.control.load(model, to_json(new) if new is not None else None, self._load_timeout_s)
        except ControlDisabled as exc:
            raise ControlDisabledError(f"nothing was applied to {model!r}: {exc}") from exc
        except ControlTimeout as exc:  # a time-out or a dropped connection: the load may still run
            raise ConfigTimeoutError(model, f"the load did not answer within {self._load_timeout_s:g} s ({exc})",
                                     self._restore(model, old)) from exc
        except ControlError as exc:
            reason = self._reason(model, str(exc))
            raise ConfigRejectedError(model, reason, self._ensure_serving(model, old)) from exc

    def _by_poll(self, model: str, effective: ModelConfig | None, text: str, old: ModelConfig, exact: bool) -> str:
        """Poll mode: write the file, wait until the server serves it, verify; on failure write the old file back.

        exact: the change is a set of fields over what serves (the knobs): wait until the server shows exactly
        those values. Otherwise (a whole text) wait until what serves differs where the text changed.
        """
        old_text = self.file_text(model)
        if exact and effective is not None:
            fields = _fields_to_see(old, effective)
            arrived = lambda now: _shows(now, effective, fields)  # noqa: E731
        else:
            mine = parse_config(old_text) if old_text else ModelConfig()
            fields = _fields_to_see(mine, parse_config(text) if effective is not None else ModelConfig())
            arrived = lambda now: not fields or any(getattr(now, f) != getattr(old, f) for f in fields)  # noqa: E731
        self._persist(model, text if effective is not None else None)
        try:
            served = self.poll_wait(model, arrived, self._load_timeout_s)
            return self._verify(model, served)
        except (ConfigError, SmokeFailure) as exc:
            self._persist(model, old_text)
            try:
                self.poll_wait(model, lambda now: all(getattr(now, f) == getattr(old, f) for f in fields),
                               max(self._load_timeout_s, RESTORE_TIMEOUT_S))
                restored = "the old config.pbtxt was written back and serves again"
            except ConfigError as again:
                restored = f"the old config.pbtxt was written back but the server has not reloaded it ({again})"
            if isinstance(exc, SmokeFailure):
                raise ConfigRolledBackError(model, str(exc), restored) from exc
            raise ConfigRejectedError(model, getattr(exc, "reason", None) or str(exc), restored) from exc

    def _verify(self, model: str, served: ModelConfig) -> str:
        """Check the model answers as its config says (a smoke request); return what was checked (SmokeFailure)."""
        return verify(self.endpoint, model, served, answer_check(self.repo, model))

    def _ready_configs(self, but: str) -> dict[str, ModelConfig]:
        """Return the served config of every READY model but one."""
        configs = {}
        for state in fetch_status(self.endpoint).models:
            if state.state == "READY" and state.name != but:
                try:
                    configs[state.name] = self.live(state.name)
                except ServerQueryError:
                    continue
        return configs

    def _ensemble_breaks(self, model: str, new: ModelConfig) -> list:
        """Return what new breaks in the ensembles that run the model (Triton would reload them and fail)."""
        configs = self._ready_configs(model)
        out = []
        for ensemble in ensembles_using(model, configs):
            others = {step: configs[step] for step in steps_of(configs[ensemble]) if step in configs}
            out += step_breaks(model, new, ensemble, configs[ensemble], others)
        return out

    def _served_or(self, model: str, fallback: ModelConfig | None) -> ModelConfig:
        try:
            return self.live(model)
        except ServerQueryError:
            if fallback is None:
                raise
            return fallback

    def _ensure_serving(self, model: str, old: ModelConfig) -> str:
        """After a refused load: check that the old config serves; load it again when the model fell over."""
        try:
            self._verify(model, old)
        except SmokeFailure as failure:
            return f"the failed load left it not serving ({failure}); " + self._restore(model, old)
        return "it keeps serving the old one (checked)"

    def _restore(self, model: str, old: ModelConfig) -> str:
        """Load the previous config again and check it; say what serves now."""
        try:  # a known-good config; it may have to wait for a load still running on the server
            self.control.load(model, to_json(old), max(self._load_timeout_s, RESTORE_TIMEOUT_S))
            checked = self._verify(model, old)
        except ControlTimeout as exc:
            return f"restoring the previous config did not answer ({exc}): check the server"
        except (ControlError, SmokeFailure) as exc:
            return (f"the previous config could NOT be restored ({clean(str(exc))[:300]}): the model may be "
                    "unavailable — see the server log, fix the config, and apply it or restart the server")
        except Exception as exc:  # noqa: BLE001 - reported, never raised from inside a failure report
            return f"restoring the previous config did not answer ({exc}): check the server"
        return f"the previous config was restored and serves ({checked})"

    def _persist(self, model: str, text: str | None) -> bool:
        """Write config.pbtxt (text None: remove it); False when there is no repository to write to."""
        if self.repo is None:
            return False
        path = self.config_path(model)
        try:
            if text is None:
                path.unlink(missing_ok=True)
            else:
                write_text_atomic(path, text)
        except OSError as exc:
            raise ConfigPersistError(
                f"the server now serves the new config of {model!r} but {path} could not be written: {exc}; "
                "free the disk or fix permissions, then apply again"
            ) from exc
        return True

    def _baseline(self, model: str) -> None:
        """Record what serves first when the history does not end with it (first use, outside edits)."""
        text = self.file_text(model)
        no_file = text is None and self.repo is not None
        if text is None:
            text = "" if no_file else self.current_text(model)
        stack = self.history_store.stack(model)
        if stack:
            last = stack[-1]
            if self.history_store.text(model, last.id) == text and last.no_file == no_file:
                return
        self.history_store.record(model, text, Action.BASELINE, persisted=self.repo is not None, no_file=no_file)

    def _effective(self, model: str, config: ModelConfig, text: str) -> ModelConfig:
        """Return what a config text will serve: Triton auto-completes the tensors (and a Python model's batching)
        a text leaves out, so those come from what serves now."""
        try:
            served = self.live(model)
        except ServerQueryError:
            return config
        out = copy_config(config)
        if not out.input:
            out.input.extend(served.input)
        if not out.output:
            out.output.extend(served.output)
        if not out.max_batch_size and served.max_batch_size and "max_batch_size" not in text:
            out.max_batch_size = served.max_batch_size
        return out

    def _diff(self, model: str, old: str, new: str) -> str:
        return config_diff(model, old, new)

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


TUNABLES = ("max_batch_size", "instance_group", "dynamic_batching", "sequence_batching", "parameters")


def _shows(served: ModelConfig, wanted: ModelConfig, fields: list[str]) -> bool:
    """Return True when the served config shows wanted's values of fields: tunables as the knobs read them (Triton
    renames an instance group it fills in, so groups compare by count, kind and GPUs), the rest exactly."""
    if any(f in TUNABLES for f in fields) and settings_of(served) != settings_of(wanted):
        return False
    return all(getattr(served, f) == getattr(wanted, f) for f in fields if f not in TUNABLES)


def _fields_to_see(old: ModelConfig, new: ModelConfig | None) -> list[str]:
    """Return the top-level fields a reload from new changes: what to wait for the server to show."""
    if new is None:
        return []
    return [f.name for f in ModelConfig.DESCRIPTOR.fields if getattr(old, f.name) != getattr(new, f.name)]
