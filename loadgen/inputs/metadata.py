"""What a model expects: its inputs and outputs, read from the server before a run."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass


class ModelUnavailable(RuntimeError):
    """The server does not serve the model (or cannot be reached)."""


@dataclass(frozen=True)
class TensorInfo:
    """One input or output: name, Triton datatype, dims without the batch dimension, and whether it may be left out."""

    name: str
    datatype: str
    dims: tuple[int, ...]
    optional: bool = False  # an input the model runs without (config `optional: true`)


@dataclass(frozen=True)
class ModelInfo:
    """A model's tensors and whether it takes a leading batch dimension."""

    name: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    max_batch_size: int
    decoupled: bool = False  # answers over a stream (gRPC streaming), zero or more responses per request

    def input_names(self) -> list[str]:
        """Return the names of the inputs, in the model's order."""
        return [t.name for t in self.inputs]


def fetch_model(url: str, model: str, timeout_s: float = 5.0) -> ModelInfo:
    """Read a model's metadata and config from GET /v2/models/MODEL[/config]."""
    base = f"{url.rstrip('/')}/v2/models/{model}"
    meta, config = _get(base, timeout_s), _get(f"{base}/config", timeout_s)
    batch = int(config.get("max_batch_size", 0))
    decoupled = bool(config.get("model_transaction_policy", {}).get("decoupled"))
    optional = {t.get("name") for t in config.get("input", []) if t.get("optional")}  # metadata does not say

    def tensors(items) -> tuple[TensorInfo, ...]:
        return tuple(
            TensorInfo(t["name"], t["datatype"], tuple(int(d) for d in t["shape"])[1 if batch else 0:],
                       t["name"] in optional)
            for t in items
        )

    return ModelInfo(model, tensors(meta.get("inputs", [])), tensors(meta.get("outputs", [])), batch, decoupled)


def info_from_config(config: dict, name: str = "") -> ModelInfo:
    """Return the ModelInfo of a model config in its JSON form (GET /v2/models/M/config, or a ModelConfig through
    json_format.MessageToDict with preserving_proto_field_name=True)."""

    def tensors(items, inputs: bool) -> tuple[TensorInfo, ...]:
        return tuple(TensorInfo(t["name"], config_datatype(t.get("data_type", "TYPE_INVALID")),
                                tuple(int(d) for d in t.get("dims", ())), bool(inputs and t.get("optional")))
                     for t in items)

    decoupled = bool(config.get("model_transaction_policy", {}).get("decoupled"))
    return ModelInfo(name or config.get("name", ""), tensors(config.get("input", []), True),
                     tensors(config.get("output", []), False), int(config.get("max_batch_size", 0)), decoupled)


def config_datatype(data_type: str) -> str:
    """Return the protocol datatype of a config data_type: TYPE_FP32 -> FP32, TYPE_STRING -> BYTES."""
    short = data_type.removeprefix("TYPE_")
    return "BYTES" if short == "STRING" else short


def _get(url: str, timeout_s: float) -> dict:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise ModelUnavailable(f"{url}: HTTP {exc.code} {exc.read()[:200].decode(errors='replace')}") from None
    except OSError as exc:
        raise ModelUnavailable(f"{url}: {exc}") from None
