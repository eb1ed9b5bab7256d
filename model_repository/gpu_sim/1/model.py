"""Simulated GPU (a labelled cost model): every instance shares one simulated device.

An execution costs a fixed launch overhead, host-to-device and device-to-host copies
proportional to bytes, and compute that grows sub-linearly with batch size up to a
saturation batch, linearly beyond (or faster, with an overflow exponent above 1: a batch
that no longer fits the caches or memory bandwidth, the field guide's pattern C). Compute phases of all instances take turns on one
device lock (time-slicing); launches and copies overlap other instances' compute. The
model sleeps instead of burning CPU, so it behaves the same on a 2-core machine.
"""
from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os
import time
from dataclasses import dataclass, fields

import numpy as np

DEFAULTS = {
    "launch_overhead_us": 2500.0,
    "copy_us_per_kib": 250.0,
    "compute_us_batch1": 3000.0,
    "compute_batch_exponent": 0.35,
    "compute_saturation_batch": 16.0,
    "compute_overflow_exponent": 1.0,
}


@dataclass(frozen=True)
class CostModel:
    """Costs in microseconds of one execution on the simulated device."""

    launch_overhead_us: float = DEFAULTS["launch_overhead_us"]
    copy_us_per_kib: float = DEFAULTS["copy_us_per_kib"]
    compute_us_batch1: float = DEFAULTS["compute_us_batch1"]
    compute_batch_exponent: float = DEFAULTS["compute_batch_exponent"]
    compute_saturation_batch: float = DEFAULTS["compute_saturation_batch"]
    compute_overflow_exponent: float = DEFAULTS["compute_overflow_exponent"]

    @classmethod
    def from_parameters(cls, parameters: dict) -> "CostModel":
        """Build from a model config's `parameters` map ({key: {"string_value": ...}})."""
        values = {}
        for f in fields(cls):
            raw = parameters.get(f.name)
            if raw is not None:
                values[f.name] = float(raw["string_value"] if isinstance(raw, dict) else raw)
        return cls(**values)

    def copy_us(self, nbytes: int) -> float:
        """Return the time of one host<->device copy of nbytes."""
        return self.copy_us_per_kib * nbytes / 1024.0

    def compute_us(self, batch: int) -> float:
        """Return the device compute time of one batch."""
        sat = max(1.0, self.compute_saturation_batch)
        if batch <= sat:
            return self.compute_us_batch1 * batch ** self.compute_batch_exponent
        return self.compute_us_batch1 * sat ** self.compute_batch_exponent * (batch / sat) ** self.compute_overflow_exponent


class SharedDevice:
    """One simulated device per server process, shared by all instances through a file lock."""

    def __init__(self, key: str) -> None:
        _remove_stale_locks()
        path = f"/tmp/tbl-gpusim-{os.getppid()}-{key}.lock"
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    def compute(self, seconds: float) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            time.sleep(seconds)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)


def _remove_stale_locks() -> None:
    """Delete lock files of servers that no longer run (the file name carries the server's PID)."""
    for path in glob.glob("/tmp/tbl-gpusim-*-*.lock"):
        try:
            os.kill(int(path.split("-")[2]), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.unlink(path)
        except (ValueError, PermissionError):
            continue


class TritonPythonModel:
    """Identity model whose execution time follows the simulated device."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.cost = CostModel.from_parameters(config.get("parameters", {}))
        self.device = SharedDevice(args.get("model_instance_device_id", "0"))

    def execute(self, requests):
        import triton_python_backend_utils as pb_utils  # noqa: PLC0415 - only inside Triton

        inputs = [pb_utils.get_input_tensor_by_name(r, "INPUT").as_numpy() for r in requests]
        batch = sum(int(x.shape[0]) for x in inputs)
        nbytes = sum(int(x.nbytes) for x in inputs)
        time.sleep((self.cost.launch_overhead_us + self.cost.copy_us(nbytes)) / 1e6)
        self.device.compute(self.cost.compute_us(batch) / 1e6)
        time.sleep(self.cost.copy_us(nbytes) / 1e6)
        return [
            pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT", np.ascontiguousarray(x))])
            for x in inputs
        ]
