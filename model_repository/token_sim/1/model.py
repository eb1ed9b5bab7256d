"""Simulated autoregressive decoder (a labelled cost model): one streamed token per decode step.

Decoupled: each generated token is its own response (TOKEN = the step index 0..LENGTH-1, so a
client can check order), the last one carrying the final flag. A decode step costs a fixed launch
overhead plus compute that grows sub-linearly with the rows in the step up to a saturation batch,
linearly beyond (gpu_sim's curve). Compute of all instances takes turns on one simulated device
(a file lock); the model sleeps instead of burning CPU, so it behaves the same on 2 cores.

The config parameter `batching` picks how sequences share steps:
- request: execute() gets the dynamic batcher's batch and decodes until its LONGEST member is done;
  rows of finished members stay in every step, new requests wait in the queue for the next batch.
- inflight: execute() hands requests to a decode loop and returns at once; at every step finished
  sequences leave and waiting ones join, up to `max_active` rows.
"""
from __future__ import annotations

import collections
import contextlib
import fcntl
import glob
import json
import os
import threading
import time
from dataclasses import dataclass, fields

import numpy as np

MAX_LENGTH = 4096  # tokens per request; more is taken for a client's mistake
DRAIN_S = 30.0  # finalize() lets running generations finish for this long


@dataclass(frozen=True)
class StepCost:
    """Costs in microseconds of one decode step on the simulated device."""

    launch_overhead_us: float = 1000.0
    compute_us_batch1: float = 2000.0
    compute_batch_exponent: float = 0.35
    compute_saturation_batch: float = 16.0

    @classmethod
    def from_parameters(cls, parameters: dict) -> StepCost:
        """Build from a model config's `parameters` map ({key: {"string_value": ...}})."""
        values = {f.name: float(parameters[f.name]["string_value"]) for f in fields(cls) if f.name in parameters}
        return cls(**values)

    def compute_us(self, rows: int) -> float:
        """Return the device compute time of one step over `rows` rows."""
        sat = max(1.0, self.compute_saturation_batch)
        if rows <= sat:
            return self.compute_us_batch1 * rows ** self.compute_batch_exponent
        return self.compute_us_batch1 * sat ** self.compute_batch_exponent * rows / sat


class SharedDevice:
    """One simulated device per server process for this model's instances, through a file lock."""

    def __init__(self, key: str) -> None:
        for path in glob.glob("/tmp/tbl-tokensim-*-*.lock"):  # the name carries the server's PID
            try:
                os.kill(int(path.split("-")[2]), 0)
            except ProcessLookupError:  # that server no longer runs
                with contextlib.suppress(OSError):
                    os.unlink(path)
            except (ValueError, OSError):
                continue
        self._fd = os.open(f"/tmp/tbl-tokensim-{os.getppid()}-{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)

    def step(self, cost: StepCost, rows: int) -> None:
        time.sleep(cost.launch_overhead_us / 1e6)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            time.sleep(cost.compute_us(rows) / 1e6)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)


class Generation:
    """One request's generation: its response sender and how many tokens it still owes."""

    def __init__(self, pb_utils, request) -> None:
        self._pb, self.sender, self.sent = pb_utils, request.get_response_sender(), 0
        values = pb_utils.get_input_tensor_by_name(request, "LENGTH").as_numpy().reshape(-1)
        self.length = int(values[0]) if values.size == 1 else 0
        if values.size != 1 or not 1 <= self.length <= MAX_LENGTH:
            self.fail(f"LENGTH must be one integer in 1..{MAX_LENGTH}, got {values.tolist()}")

    @property
    def done(self) -> bool:
        return self.sent >= self.length

    def emit(self) -> None:
        """Send the next token; the last one carries the final flag. A sender that fails ends the generation."""
        token = self._pb.Tensor("TOKEN", np.array([[self.sent]], np.int32))
        self.sent += 1
        flags = self._pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL if self.done else 0
        try:
            self.sender.send(self._pb.InferenceResponse(output_tensors=[token]), flags=flags)
        except Exception:  # noqa: BLE001 - the request is gone; the loop must go on for the others
            self.length = self.sent

    def fail(self, message: str) -> None:
        self.length = self.sent
        self.sender.send(self._pb.InferenceResponse(error=self._pb.TritonError(message)),
                         flags=self._pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


class DecodeLoop:
    """Step-level (in-flight) batching: a thread decodes the active set; sequences join and leave per step."""

    def __init__(self, step, max_active: int) -> None:
        self._step, self._max_active = step, max(1, max_active)
        self._waiting: collections.deque[Generation] = collections.deque()
        self._wake = threading.Condition()
        self._stopping = self._abort = False
        self._thread = threading.Thread(target=self._run, name="token_sim-decode", daemon=True)
        self._thread.start()

    def submit(self, generations: list[Generation]) -> None:
        with self._wake:
            self._waiting.extend(g for g in generations if not g.done)
            self._wake.notify()

    def stop(self, drain_s: float) -> None:
        """Let running generations finish for up to drain_s, then fail what is left."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(drain_s)
        self._abort = True
        self._thread.join(5.0)

    def _run(self) -> None:
        active: list[Generation] = []
        while True:
            with self._wake:
                while not active and not self._waiting and not self._stopping:
                    self._wake.wait()
                while self._waiting and len(active) < self._max_active:
                    active.append(self._waiting.popleft())
                if self._abort:
                    for generation in [*active, *self._waiting]:
                        generation.fail("token_sim was unloaded before this generation finished")
                    return
                if self._stopping and not active:
                    return
            self._step(len(active))
            for generation in active:
                generation.emit()
            active = [g for g in active if not g.done]


class TritonPythonModel:
    """Decoupled token generator under request-level or in-flight batching."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.cost = StepCost.from_parameters(params)
        self.device = SharedDevice(args.get("model_instance_device_id", "0"))
        self.mode = params.get("batching", {}).get("string_value", "inflight")
        if self.mode not in ("request", "inflight"):
            raise ValueError(f"parameter batching must be request or inflight, got {self.mode!r}")
        max_active = int(float(params.get("max_active", {}).get("string_value", "16")))
        self.loop = DecodeLoop(self._step, max_active) if self.mode == "inflight" else None

    def _step(self, rows: int) -> None:
        self.device.step(self.cost, rows)

    def execute(self, requests):
        import triton_python_backend_utils as pb_utils  # noqa: PLC0415 - only inside Triton

        # Decoupled: execute() returns nothing; every response goes out through its request's sender.
        generations = [Generation(pb_utils, r) for r in requests]
        if self.loop is not None:
            self.loop.submit(generations)
            return
        live = [g for g in generations if not g.done]
        for _ in range(max((g.length for g in live), default=0)):
            self._step(len(live))  # finished members' rows still occupy the batch
            for g in live:
                if not g.done:
                    g.emit()

    def finalize(self):
        if self.loop is not None:
            self.loop.stop(DRAIN_S)
