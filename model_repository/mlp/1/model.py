"""A real network on the CPU: the ONNX MLP next to this file, run by onnxruntime.

On a GPU server the same model.onnx is served by `configs/gpu.pbtxt` with
platform onnxruntime_onnx and KIND_GPU instead.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


class TritonPythonModel:
    """Run model.onnx with onnxruntime, one thread per instance."""

    def initialize(self, args):
        import onnxruntime as ort  # noqa: PLC0415 - the stub imports it from the venv

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        path = Path(__file__).resolve().parent / "model.onnx"
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def execute(self, requests):
        import triton_python_backend_utils as pb_utils  # noqa: PLC0415 - only inside Triton

        inputs = [pb_utils.get_input_tensor_by_name(r, "INPUT").as_numpy() for r in requests]
        sizes = [x.shape[0] for x in inputs]
        (out,) = self.session.run(["OUTPUT"], {"INPUT": np.concatenate(inputs).astype(np.float32)})
        responses, start = [], 0
        for n in sizes:
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT", out[start:start + n])]))
            start += n
        return responses
