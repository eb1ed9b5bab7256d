"""Typed errors of the config layer, each with a message a person can act on."""
from __future__ import annotations

import re
from dataclasses import dataclass

_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """Return text without terminal escape sequences and control characters (newlines and tabs stay)."""
    return _CONTROL.sub("", text)


class ConfigError(Exception):
    """Base of every config-layer error."""


class ConfigParseError(ConfigError, ValueError):
    """A config.pbtxt or config JSON is not a valid ModelConfig; line and column when the parser knows them."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        self.line, self.column = line, column
        super().__init__(clean(message))


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config: the field and how to fix it."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class ConfigValidationError(ConfigError, ValueError):
    """A config breaks a rule; .field names the first bad field, .problems lists them all."""

    def __init__(self, field: str, message: str, problems: tuple[Problem, ...] = ()) -> None:
        self.field = clean(field)
        self.problems = tuple(Problem(clean(p.field), clean(p.message)) for p in problems) or (
            Problem(self.field, clean(message)),)
        text = "; ".join(str(p) for p in self.problems)
        super().__init__(text if len(self.problems) > 1 else str(self.problems[0]))

    @classmethod
    def of(cls, problems: list[Problem]) -> ConfigValidationError:
        """Build one error from a non-empty list of problems."""
        first = problems[0]
        return cls(first.field, first.message, tuple(problems))


class ConfigRejectedError(ConfigError):
    """The server refused to load a config; `serving` says what serves now (checked, not assumed)."""

    def __init__(self, model: str, server_message: str, serving: str = "it keeps serving the old one") -> None:
        self.model = model
        self.server_message = clean(server_message)
        self.serving = serving
        super().__init__(
            f"the server rejected the new config of {model!r}: {self.server_message} — {serving}; "
            "fix the config and apply again"
        )


class ConfigRolledBackError(ConfigError):
    """The server loaded the new config but it did not serve right; the previous config was restored."""

    def __init__(self, model: str, what_failed: str, restored: str) -> None:
        self.model, self.what_failed, self.restored = model, clean(what_failed), restored
        super().__init__(f"{model!r} loaded the new config but it failed its check: {self.what_failed} — {restored}; "
                         "config.pbtxt and the history are unchanged")


class ConfigTimeoutError(ConfigRolledBackError):
    """Loading the new config took longer than the apply timeout; the previous config was restored."""


class ContractChangeError(ConfigError):
    """The new config changes what clients must send or get back; apply again with confirmation."""

    def __init__(self, model: str, changes: list) -> None:
        self.model, self.changes = model, list(changes)
        listed = "; ".join(str(c) for c in self.changes)
        super().__init__(f"the new config changes the contract of {model!r} with its clients ({listed}): requests "
                         "built for the old one may fail — confirm the contract change to apply it")


class StaleConfigError(ConfigError):
    """Another apply landed since this change was prepared; it was built from an older config."""

    def __init__(self, model: str, current_text: str) -> None:
        self.model, self.current_text = model, current_text
        super().__init__(f"another change to {model!r} landed since this one was prepared; nothing was applied — "
                         "the knobs now show what serves: make the change again")


class HistoryError(ConfigError, LookupError):
    """A requested config version does not exist (nothing to undo, unknown version id), or the history cannot be
    read or written."""


class UnrecordedError(HistoryError):
    """The server serves the new config, but the history could not record it (Undo cannot step back over it)."""


class ServerQueryError(ConfigError):
    """The server could not be asked something (unreachable, model not loaded)."""
