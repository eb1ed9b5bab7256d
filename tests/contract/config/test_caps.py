"""Server caps on the real server: its GPU count, model names from the repository or the server; a dead one."""
from __future__ import annotations

import pytest

from app.config import ServerQueryError, server_caps, server_gpu_count
from app.config.caps import served_model_names
from app.server.endpoint import Endpoint


def test_caps_of_a_local_and_a_remote_server(triton):
    assert server_gpu_count(triton.endpoint) == 0  # the embedded server has no GPU
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
