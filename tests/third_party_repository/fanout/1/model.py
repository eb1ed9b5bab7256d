"""Decoupled: for COUNT = n, send n responses (INDEX 0..n-1, each after DELAY_MS), then the final flag."""
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

DELAY_S = 0.002


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            count = int(pb_utils.get_input_tensor_by_name(request, "COUNT").as_numpy().reshape(-1)[0])
            sender = request.get_response_sender()
            threading.Thread(target=self._send, args=(sender, max(0, min(count, 64))), daemon=True).start()
        return None

    @staticmethod
    def _send(sender, count):
        for i in range(count):
            time.sleep(DELAY_S)
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("INDEX", np.array([i], np.int32))]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
