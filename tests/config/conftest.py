"""Fixtures of the config tests: pristine configs, caps, a service on the session server."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as triton_http

from app.config import ConfigHistory, ConfigService, ServerCaps, read_config
from app.paths import MODEL_REPOSITORY

SHIPPED = sorted([*MODEL_REPOSITORY.glob("*/config.pbtxt"), *MODEL_REPOSITORY.glob("*/configs/*.pbtxt")])


def shipped_id(path: Path) -> str:
    """Name a shipped config by its path inside the repository."""
    return str(path.relative_to(MODEL_REPOSITORY))


def pristine(model: str):
    """Return the shipped config of a model."""
    return read_config(MODEL_REPOSITORY / model / "config.pbtxt")


def infer_gpu_sim(client: triton_http.InferenceServerClient, value: float = 1.0) -> np.ndarray:
    """Send one gpu_sim request and return its output."""
    tensor = triton_http.InferInput("INPUT", [1, 256], "FP32")
    tensor.set_data_from_numpy(np.full((1, 256), value, dtype=np.float32))
    return client.infer("gpu_sim", [tensor]).as_numpy("OUTPUT")


@pytest.fixture
def caps() -> ServerCaps:
    """Caps of the shipped repository on a server without GPUs."""
    return ServerCaps.of_repository(MODEL_REPOSITORY, gpu_count=0)


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
