"""What the lab's gpu_sim cost model tells the twin: a config whose parameters hold GPU_SIM_KEY runs it, and its
compute (the part of an execution that holds the simulated device's lock) is known per batch size from them.

The rule is read from the model itself (model_repository/gpu_sim/1/model.py), never copied: the twin uses it as a
prior — a labelled cost model's own figures — and everything else from what the server measured.
"""
from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from functools import cache

from app.paths import MODEL_REPOSITORY

GPU_SIM_KEY = "compute_us_batch1"  # a config whose parameters hold this runs the lab's gpu_sim cost model
GPU_SIM_ITEM_BYTES = 1024  # gpu_sim's input: 256 float32 per item


@cache
def gpu_sim_cost_model():
    """Return gpu_sim's CostModel class, read from the model itself so the twin never copies its rule."""
    spec = importlib.util.spec_from_file_location("tbl_gpu_sim_model", MODEL_REPOSITORY / "gpu_sim/1/model.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module.CostModel


def cost_parameters(parameters: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Return a config's parameters as the twin keeps them where they are gpu_sim's cost model (else ())."""
    return tuple(sorted(parameters.items())) if GPU_SIM_KEY in parameters else ()


@cache
def device_us(parameters: tuple[tuple[str, str], ...], size: int) -> float:
    """Return the time a batch of `size` holds gpu_sim's device (its compute), by the cost model in parameters."""
    return float(gpu_sim_cost_model().from_parameters(dict(parameters)).compute_us(size))
