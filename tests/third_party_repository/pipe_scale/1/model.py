"""SCALED = 3 * RAW (the ensemble's first step)."""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "SCALED", (3 * pb_utils.get_input_tensor_by_name(r, "RAW").as_numpy()).astype(np.float32))])
            for r in requests]
