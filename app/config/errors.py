"""Typed errors of the config layer, each with a message a person can act on."""
from __future__ import annotations

from dataclasses import dataclass


class ConfigError(Exception):
    """Base of every config-layer error."""


class ConfigParseError(ConfigError, ValueError):
    """A config.pbtxt or config JSON is not a valid ModelConfig."""


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
        self.field = field
        self.problems = problems or (Problem(field, message),)
        text = "; ".join(str(p) for p in self.problems)
        super().__init__(text if len(self.problems) > 1 else f"{field}: {message}")

    @classmethod
    def of(cls, problems: list[Problem]) -> ConfigValidationError:
        """Build one error from a non-empty list of problems."""
        first = problems[0]
        return cls(first.field, first.message, tuple(problems))


class ConfigRejectedError(ConfigError):
    """The server refused to load a config; the old config keeps serving."""

    def __init__(self, model: str, server_message: str) -> None:
        self.model = model
        self.server_message = server_message
        super().__init__(
            f"the server rejected the new config of {model!r} and keeps serving the old one: "
            f"{server_message} - fix the config and apply again"
        )


class HistoryError(ConfigError, LookupError):
    """A requested config version does not exist (nothing to undo, unknown version id)."""


class ServerQueryError(ConfigError):
    """The server could not be asked something (unreachable, model not loaded)."""
