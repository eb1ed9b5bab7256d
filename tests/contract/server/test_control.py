"""Model control over gRPC (HTTP when no gRPC answers), against the real server."""
from __future__ import annotations

import dataclasses
import socket

import pytest
import tritonclient.http as http

from app.config.model_config import from_json, to_json
from app.server.control import ControlError, ControlTimeout, ModelControl
from tests.helpers import wait_until


def _closed_port() -> int:
    """Return a local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _live(triton, model: str):
    return from_json(http.InferenceServerClient(triton.endpoint.host_port).get_model_config(model))


def test_loads_go_over_grpc_and_take_a_config(triton, restore_model):
    restore_model("gpu_sim")
    control = ModelControl(triton.endpoint)
    assert control.transport.name == "grpc", control.transport
    config = _live(triton, "gpu_sim")
    config.dynamic_batching.max_queue_delay_microseconds = 1234
    control.load("gpu_sim", to_json(config), timeout_s=60)
    assert _live(triton, "gpu_sim").dynamic_batching.max_queue_delay_microseconds == 1234


def test_without_grpc_it_falls_back_to_http_and_says_why(triton, restore_model):
    restore_model("gpu_sim")
    endpoint = dataclasses.replace(triton.endpoint, grpc_url=f"127.0.0.1:{_closed_port()}")
    control = ModelControl(endpoint)
    assert control.transport.name == "http"
    assert "did not answer" in control.transport.why and "stall" in control.transport.why
    config = _live(triton, "gpu_sim")
    config.dynamic_batching.max_queue_delay_microseconds = 4321
    control.load("gpu_sim", to_json(config), timeout_s=60)
    assert _live(triton, "gpu_sim").dynamic_batching.max_queue_delay_microseconds == 4321


@pytest.mark.parametrize("prefer_grpc", [True, False])
def test_a_refused_load_is_a_control_error_with_the_servers_reason(triton, prefer_grpc):
    control = ModelControl(triton.endpoint, prefer_grpc=prefer_grpc)
    with pytest.raises(ControlError) as raised:
        control.load("no_such_model", timeout_s=30)
    assert not isinstance(raised.value, ControlTimeout)
    assert "no_such_model" in str(raised.value), str(raised.value)


def test_a_load_that_outlives_its_deadline_is_a_timeout(triton, restore_model):
    """A warm-up that takes seconds holds the load past a 0.3 s deadline: a timeout, not a refusal."""
    restore_model("gpu_sim")
    control = ModelControl(triton.endpoint)
    config = _live(triton, "gpu_sim")
    config.parameters["compute_us_batch1"].string_value = "200000"  # 0.2 s per warm-up request
    warmup = config.model_warmup.add(name="slow", batch_size=1, count=10)
    warmup.inputs["INPUT"].data_type = config.input[0].data_type
    warmup.inputs["INPUT"].dims.extend([256])
    warmup.inputs["INPUT"].zero_data = True
    with pytest.raises(ControlTimeout):
        control.load("gpu_sim", to_json(config), timeout_s=0.3)
    # the server finishes that load on its own; wait for it before the fixture puts the shipped config back
    wait_until(lambda: _live(triton, "gpu_sim").parameters["compute_us_batch1"].string_value == "200000"
               and http.InferenceServerClient(triton.endpoint.host_port).is_model_ready("gpu_sim"),
               timeout_s=60, what="the slow load to finish")
