"""Trivial identity model: the cheapest possible server side, so a benchmark measures the client."""
from __future__ import annotations


class TritonPythonModel:
    """Return INPUT as OUTPUT."""

    def execute(self, requests):
        import triton_python_backend_utils as pb_utils  # noqa: PLC0415 - only inside Triton

        return [
            pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("OUTPUT", pb_utils.get_input_tensor_by_name(r, "INPUT").as_numpy())]
            )
            for r in requests
        ]
