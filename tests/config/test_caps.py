"""Server caps: GPU count from metrics, model names from the repository or the server."""
from __future__ import annotations

import pytest

from app.config import ServerQueryError, gpu_count_from_metrics, server_caps, server_gpu_count
from app.config.caps import served_model_names
from app.server.endpoint import Endpoint

# The shape of a GPU server's metrics (NGC tritonserver); written by hand: no GPU here to capture it.
GPU_METRICS = """\
# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)
# TYPE nv_gpu_utilization gauge
nv_gpu_utilization{gpu_uuid="GPU-0a1b"} 0.25
nv_gpu_utilization{gpu_uuid="GPU-9f8e"} 0
# HELP nv_gpu_memory_used_bytes GPU used memory, in bytes
# TYPE nv_gpu_memory_used_bytes gauge
nv_gpu_memory_used_bytes{gpu_uuid="GPU-0a1b"} 1024
"""


def test_gpus_are_counted_from_the_utilization_metric():
    assert gpu_count_from_metrics(GPU_METRICS) == 2
    assert gpu_count_from_metrics("# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization 0.5\n") == 0


def test_the_embedded_server_has_no_gpu(triton):
    assert server_gpu_count(triton.endpoint) == 0


def test_caps_of_a_local_and_a_remote_server(triton):
    local = server_caps(triton.endpoint, triton.repo)
    assert local.gpu_count == 0 and local.repo == triton.repo
    assert {"gpu_sim", "stream_acc", "mlp"} <= local.model_names
    remote = server_caps(triton.endpoint, None)
    assert remote.repo is None and remote.model_names == served_model_names(triton.endpoint)
    assert {"gpu_sim", "stream_acc", "mlp"} <= remote.model_names


def test_an_unreachable_server_says_where_it_looked():
    dead = Endpoint("http://127.0.0.1:9", "127.0.0.1:9", "http://127.0.0.1:9/metrics")
    with pytest.raises(ServerQueryError, match="TRITON_METRICS_URL"):
        server_gpu_count(dead, timeout_s=1)
