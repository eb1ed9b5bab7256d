"""What Triton serves for a model folder with no config.pbtxt, as far as the fake server can tell without a backend,
and the defaults it fills into every config it serves (those the pages read).

A Python model declares its config in `auto_complete_config`: the Python backend hands it the (empty) config and
serves what it returns. The fake server does the same with a small stand-in of that object (tensors, max batch size,
dynamic batching, decoupled). Any other model without a config (an ONNX file, say) needs the backend to read it: the
fake server has none, so that model is UNAVAILABLE with that reason.
"""
from __future__ import annotations

import copy
import importlib.util
import sys
import types
from pathlib import Path

from app.config.model_config import ModelConfig, copy_config, from_json
from tritonclient.grpc import model_config_pb2 as pb


class NoAutoComplete(Exception):
    """The fake server cannot complete this model's config (Triton would need the backend)."""


class AutoCompleteConfig:
    """The object the Python backend passes to auto_complete_config: the config so far, and its setters."""

    def __init__(self, name: str) -> None:
        self.config: dict = {"name": name, "backend": "python", "input": [], "output": [], "max_batch_size": 0}

    def as_dict(self) -> dict:
        return copy.deepcopy(self.config)

    def add_input(self, tensor: dict) -> None:
        self.config["input"].append(tensor)

    def add_output(self, tensor: dict) -> None:
        self.config["output"].append(tensor)

    def set_max_batch_size(self, size: int) -> None:
        self.config["max_batch_size"] = size

    def set_dynamic_batching(self) -> None:
        self.config.setdefault("dynamic_batching", {})

    def set_model_transaction_policy(self, policy: dict) -> None:
        self.config["model_transaction_policy"] = policy


def auto_completed(folder: Path) -> ModelConfig:
    """Return the config Triton would serve for a model folder without config.pbtxt (NoAutoComplete: none here)."""
    scripts = sorted(folder.glob("[0-9]*/model.py"), key=lambda p: int(p.parent.name))
    if not scripts:
        files = sorted(p.name for p in folder.glob("[0-9]*/*") if not p.name.startswith("."))
        raise NoAutoComplete(f"no config.pbtxt, and the fake lab's server has no backend to complete one from "
                             f"{', '.join(files) or 'an empty version folder'} (Triton asks the model's backend)")
    model_class = _load(scripts[-1]).TritonPythonModel
    completer = AutoCompleteConfig(folder.name)
    if hasattr(model_class, "auto_complete_config"):
        completer = model_class.auto_complete_config(completer)
    return from_json(completer.config)


def _load(script: Path) -> types.ModuleType:
    """Import a model.py with a stand-in triton_python_backend_utils (its execute is never called here)."""
    saved = sys.modules.get("triton_python_backend_utils")
    sys.modules["triton_python_backend_utils"] = types.ModuleType("triton_python_backend_utils")
    try:
        spec = importlib.util.spec_from_file_location(f"fake_auto_complete_{script.parent.parent.name}", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        if saved is None:
            sys.modules.pop("triton_python_backend_utils", None)
        else:
            sys.modules["triton_python_backend_utils"] = saved


def with_defaults(config: ModelConfig) -> ModelConfig:
    """Return config as Triton serves it on a CPU server: one instance of KIND_CPU where no instance group says more
    (a group's count 0 is 1, its KIND_AUTO is KIND_CPU)."""
    out = copy_config(config)
    if not out.instance_group and out.platform != "ensemble":
        out.instance_group.add()
    for group in out.instance_group:
        group.count = group.count or 1
        if group.kind == pb.ModelInstanceGroup.KIND_AUTO:
            group.kind = pb.ModelInstanceGroup.KIND_CPU
    return out
