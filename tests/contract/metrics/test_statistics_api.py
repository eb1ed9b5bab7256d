"""Triton 2.51's counter reset on the real server: a reload restarts the statistics API, /metrics keeps counting."""
from __future__ import annotations

import json
import time
import urllib.request

import numpy as np
import tritonclient.http as http

from app.metrics.scrape import fetch_text, parse_metrics
from app.metrics.statistics_api import parse_stats, stats_url


def test_real_reload_restarts_stats_but_not_metric_counters(triton, restore_model):
    """Pin the Triton 2.51 behaviour the fixtures show: load_model(config) resets only the stats API."""
    restore_model("gpu_sim")
    client = http.InferenceServerClient(triton.endpoint.host_port)

    def inferences() -> float:
        values = parse_metrics(fetch_text(triton.endpoint.metrics_url), 0).models["gpu_sim"]
        return values.counters["nv_inference_count"]

    start = inferences()
    inp = http.InferInput("INPUT", [1, 256], "FP32")
    inp.set_data_from_numpy(np.ones((1, 256), dtype=np.float32))
    for _ in range(3):
        client.infer("gpu_sim", [inp])
    deadline = time.monotonic() + 10
    while inferences() < start + 3 and time.monotonic() < deadline:  # a response can beat its counter update
        time.sleep(0.05)
    before = inferences()
    assert before == start + 3
    config = client.get_model_config("gpu_sim")
    config["dynamic_batching"]["max_queue_delay_microseconds"] = 100
    client.load_model("gpu_sim", headers=triton.endpoint.control_headers, config=json.dumps(config))
    body = urllib.request.urlopen(stats_url(triton.url, "gpu_sim"), timeout=5).read().decode()
    assert parse_stats(body)["gpu_sim"].execution_count == 0
    assert inferences() == before
