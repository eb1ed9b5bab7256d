"""OUTPUT = 2 * INPUT; the config is left to auto_complete_config (no config.pbtxt)."""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        config = auto_complete_model_config.as_dict()
        have_in = {t["name"] for t in config["input"]}
        have_out = {t["name"] for t in config["output"]}
        if "INPUT" not in have_in:
            auto_complete_model_config.add_input({"name": "INPUT", "data_type": "TYPE_FP32", "dims": [4]})
        if "OUTPUT" not in have_out:
            auto_complete_model_config.add_output({"name": "OUTPUT", "data_type": "TYPE_FP32", "dims": [4]})
        auto_complete_model_config.set_max_batch_size(8)  # refuses a config that asks for more
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", (x * 2).astype(np.float32))]))
        return responses
