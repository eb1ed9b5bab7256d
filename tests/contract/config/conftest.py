"""Fixtures of the config contract tests: a config service on the session server, an HTTP client of it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as triton_http

from app.config import ConfigHistory, ConfigService


def infer_gpu_sim(client: triton_http.InferenceServerClient, value: float = 1.0) -> np.ndarray:
    """Send one gpu_sim request and return its output."""
    tensor = triton_http.InferInput("INPUT", [1, 256], "FP32")
    tensor.set_data_from_numpy(np.full((1, 256), value, dtype=np.float32))
    return client.infer("gpu_sim", [tensor]).as_numpy("OUTPUT")


@pytest.fixture
def history(tmp_path: Path) -> ConfigHistory:
    """A history store private to the test."""
    return ConfigHistory(tmp_path / "history")


@pytest.fixture
def service(triton, history) -> ConfigService:
    """A config service on the session server's repository copy, with a private history."""
    return ConfigService(triton.endpoint, triton.repo, history=history, server_log=triton.server.log_tail)


@pytest.fixture
def client(triton) -> triton_http.InferenceServerClient:
    """An HTTP client of the session server."""
    return triton_http.InferenceServerClient(triton.endpoint.host_port)
