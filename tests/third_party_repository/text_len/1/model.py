"""LENGTH[i] = the number of bytes of TEXT[i]."""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            lengths = np.vectorize(lambda s: len(s), otypes=[np.int32])(text)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("LENGTH", lengths)]))
        return responses
