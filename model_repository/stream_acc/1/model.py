"""Stateful streaming model: a running sum per sequence (correlation ID).

Each response is the sum of every INPUT the sequence has sent so far, so a client can
verify every step. With sequence batching Triton passes START/END/READY/CORRID and the
state is kept per correlation ID. Without it (say, under dynamic batching) no CORRID
arrives, every request lands in one shared state, and interleaved sequences get
visibly wrong sums: the failure the concept pages demonstrate.
"""
from __future__ import annotations

import json
import time

import numpy as np

STEP_US = 1000.0  # simulated compute per execution
SHARED_STATE = 0  # the key used when no correlation ID arrives


def _flag(pb_utils, request, name: str, default: int) -> int:
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return default if tensor is None else int(tensor.as_numpy().reshape(-1)[0])


class TritonPythonModel:
    """Running-sum accumulator keyed by correlation ID."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.step_s = float(params.get("step_us", {}).get("string_value", STEP_US)) / 1e6
        self.state: dict[int, int] = {}

    def execute(self, requests):
        import triton_python_backend_utils as pb_utils  # noqa: PLC0415 - only inside Triton

        time.sleep(self.step_s)
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy().astype(np.int64)
            rows = value.reshape(value.shape[0], -1)[:, 0]
            if not _flag(pb_utils, request, "READY", 1):
                responses.append(self._respond(pb_utils, np.zeros(len(rows), np.int32)))
                continue
            key = _flag(pb_utils, request, "CORRID", SHARED_STATE)
            if _flag(pb_utils, request, "START", 0):
                self.state[key] = 0
            out = []
            for v in rows:
                self.state[key] = self.state.get(key, 0) + int(v)
                out.append(self.state[key])
            if _flag(pb_utils, request, "END", 0):
                self.state.pop(key, None)
            responses.append(self._respond(pb_utils, np.array(out, np.int32)))
        return responses

    @staticmethod
    def _respond(pb_utils, values):
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT", values.reshape(-1, 1))])
