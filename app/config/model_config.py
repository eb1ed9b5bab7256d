"""Read and write config.pbtxt as a protobuf ModelConfig, and convert it to and from JSON."""
from __future__ import annotations

import functools
import json
import os
import tempfile
from pathlib import Path

from google.protobuf import json_format, text_format
from tritonclient.grpc.model_config_pb2 import ModelConfig

from app.config.errors import ConfigParseError
from app.config.settings import BOTH_SCHEDULERS

__all__ = [
    "ModelConfig", "copy_config", "format_config", "from_json", "parse_config",
    "read_config", "to_dict", "to_json", "write_text_atomic",
]


def parse_config(text: str, source: str = "config") -> ModelConfig:
    """Parse config.pbtxt text into a ModelConfig (a new message each call: callers may change it)."""
    try:
        return ModelConfig.FromString(_parsed(text))
    except text_format.ParseError as exc:
        raise ConfigParseError(f"{source} is not a valid Triton model config: {exc}{_hint(exc)}",
                               exc.GetLine(), exc.GetColumn()) from exc


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> bytes:
    """The wire form of a text's config: protobuf's text parser is pure Python (about 1 ms a config), reading the
    wire form is not, and a page rerun or a checked edit parses the same few texts again and again."""
    return text_format.Parse(text, ModelConfig()).SerializeToString()


def format_config(config: ModelConfig) -> str:
    """Return the canonical config.pbtxt text of a ModelConfig."""
    return text_format.MessageToString(config)


def read_config(path: Path) -> ModelConfig:
    """Read and parse a config.pbtxt file."""
    path = Path(path)
    return parse_config(path.read_text(), source=str(path))


def copy_config(config: ModelConfig) -> ModelConfig:
    """Return a deep copy, so edits never touch the caller's message."""
    new = ModelConfig()
    new.CopyFrom(config)
    return new


def to_dict(config: ModelConfig) -> dict:
    """Return the config as a dict with proto field names (64-bit ints become strings)."""
    return json_format.MessageToDict(config, preserving_proto_field_name=True)


def to_json(config: ModelConfig) -> str:
    """Return the JSON string that the model control API's load accepts as `config`."""
    return json_format.MessageToJson(config, preserving_proto_field_name=True, indent=None)


def from_json(data: str | dict) -> ModelConfig:
    """Build a ModelConfig from JSON text or a dict (e.g. get_model_config), ignoring unknown fields."""
    try:
        if isinstance(data, str):
            return json_format.Parse(data, ModelConfig(), ignore_unknown_fields=True)
        return json_format.ParseDict(data, ModelConfig(), ignore_unknown_fields=True)
    except (json_format.ParseError, json.JSONDecodeError) as exc:
        raise ConfigParseError(f"the config JSON is not a valid Triton model config: {exc}{_hint(exc)}") from exc


def _hint(exc: Exception) -> str:
    if "scheduling_choice" in str(exc):
        return f" - dynamic_batching {BOTH_SCHEDULERS}"
    return ""


def write_text_atomic(path: Path, text: str) -> None:
    """Write text through a temporary file in the same folder and os.replace it into place."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
