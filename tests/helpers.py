"""Small test-side clients: a threaded closed-loop load and a config reload by protobuf."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import tritonclient.http as http
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2


def read_config(repo: Path, model: str) -> model_config_pb2.ModelConfig:
    """Parse a model's config.pbtxt."""
    return text_format.Parse((Path(repo) / model / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())


def reload(host_port: str, model: str, config: model_config_pb2.ModelConfig) -> None:
    """Hot-reload a model with a config override."""
    body = json.dumps(json_format.MessageToDict(config, preserving_proto_field_name=True))
    http.InferenceServerClient(host_port).load_model(model, config=body)


def gpu_sim_input(rows: int = 1) -> http.InferInput:
    """Return a ready gpu_sim input of `rows` rows."""
    inp = http.InferInput("INPUT", [rows, 256], "FP32")
    inp.set_data_from_numpy(np.ones((rows, 256), np.float32))
    return inp


def closed_loop(host_port: str, model: str, concurrency: int, duration_s: float) -> tuple[int, int]:
    """Run `concurrency` threads sending gpu_sim requests back to back; return (ok, failed)."""
    counts = {"ok": 0, "failed": 0}
    lock = threading.Lock()
    stop = time.monotonic() + duration_s

    def worker() -> None:
        client = http.InferenceServerClient(host_port)
        inp = gpu_sim_input()
        while time.monotonic() < stop:
            try:
                client.infer(model, [inp])
                key = "ok"
            except Exception:  # noqa: BLE001 - counted, the test asserts on it
                key = "failed"
            with lock:
                counts[key] += 1

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts["ok"], counts["failed"]


def wait_until(condition, timeout_s: float = 30.0, what: str = "condition"):
    """Return condition()'s first truthy value, polling; fail after timeout_s naming what and the last value."""
    import pytest  # noqa: PLC0415 - only the tests import this module

    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {last!r})")
