"""The poller on the real server: every request it answers is counted in the rows and in the batch sizes."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import tritonclient.http as http

from app.metrics.poller import MetricsPoller


def test_every_request_is_counted_in_the_rows_and_the_batch_sizes(triton):
    n, threads = 96, 8
    poller = MetricsPoller(triton.endpoint, models=("gpu_sim",))
    poller.poll_once()
    data = np.ones((1, 256), dtype=np.float32)

    def one(_):
        client = http.InferenceServerClient(triton.endpoint.host_port)
        inp = http.InferInput("INPUT", [1, 256], "FP32")
        inp.set_data_from_numpy(data)
        client.infer("gpu_sim", [inp])

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(n)))
    deadline = time.monotonic() + 15
    while True:  # a response can reach the client before its counters and stats are updated
        poller.poll_once()
        snap = poller.snapshot("gpu_sim", window_s=3600)
        requests = sum(row["request_count"] or 0 for row in snap.timeline)
        hist_inferences = sum(size * k for size, k in snap.batch_hist.items())
        if (requests >= n and hist_inferences >= n) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert snap.up and all(row["up"] for row in snap.timeline)
    assert requests == n and sum(row["infer_count"] or 0 for row in snap.timeline) == n
    assert hist_inferences == n
    executions = sum(row["exec_count"] or 0 for row in snap.timeline)
    assert executions == sum(snap.batch_hist.values())
    # (that batches of more than one form under this load is a claim about speed: bench/gpu_sim_effects measures it)
