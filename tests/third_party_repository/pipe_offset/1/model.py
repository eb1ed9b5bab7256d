"""RESULT = X + 1 (the ensemble's second step)."""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "RESULT", (pb_utils.get_input_tensor_by_name(r, "X").as_numpy() + 1).astype(np.float32))])
            for r in requests]
