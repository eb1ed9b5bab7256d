"""TOTAL[i] = SCALE * sum(VALUES[i]); VALUES has a variable length, SCALE is optional (1 when absent)."""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "VALUES").as_numpy()
            scale = pb_utils.get_input_tensor_by_name(request, "SCALE")
            factor = scale.as_numpy().reshape(-1, 1) if scale is not None else 1.0
            total = (values.sum(axis=1, keepdims=True) * factor).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("TOTAL", total)]))
        return responses
