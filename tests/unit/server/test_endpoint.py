"""Remote endpoints from TRITON_URL: the addresses, and a control key that is never shown."""
from __future__ import annotations

import pytest

from app.server.endpoint import remote_endpoint


def test_no_triton_url_means_embedded():
    assert remote_endpoint({}) is None


def test_triton_url_names_http_grpc_and_metrics():
    ep = remote_endpoint({"TRITON_URL": "gpu-host:8000"})
    assert ep.http_url == "http://gpu-host:8000"
    assert ep.grpc_url == "gpu-host:8001"
    assert ep.metrics_url == "http://gpu-host:8002/metrics"
    assert ep.host_port == "gpu-host:8000"


def test_grpc_and_metrics_follow_the_http_port_unless_named():
    ep = remote_endpoint({"TRITON_URL": "http://h:9000"})
    assert (ep.grpc_url, ep.metrics_url) == ("h:9001", "http://h:9002/metrics")
    ep = remote_endpoint({"TRITON_URL": "http://h:9000", "TRITON_GRPC_URL": "g:7001"})
    assert ep.grpc_url == "g:7001"


def test_metrics_url_can_be_overridden_for_prometheus():
    ep = remote_endpoint({"TRITON_URL": "http://h:9000/", "TRITON_METRICS_URL": "http://h:9002/metrics"})
    assert ep.http_url == "http://h:9000" and ep.metrics_url == "http://h:9002/metrics"


def test_bad_triton_url_is_a_clear_error():
    with pytest.raises(ValueError, match="TRITON_URL"):
        remote_endpoint({"TRITON_URL": "ftp://x"})


def test_a_remote_servers_control_key_comes_from_triton_control_key():
    ep = remote_endpoint({"TRITON_URL": "h:8000", "TRITON_CONTROL_KEY": " k3y \n"})
    assert ep.control_key == "k3y" and ep.control_headers == {"x-tbl-control-key": "k3y"}
    bare = remote_endpoint({"TRITON_URL": "h:8000", "TRITON_CONTROL_KEY": "  "})
    assert bare.control_key is None and bare.control_headers == {}


def test_the_key_is_never_shown_and_does_not_make_another_server():
    key = "do-not-print-me"
    ep = remote_endpoint({"TRITON_URL": "h:8000", "TRITON_CONTROL_KEY": key})
    assert key not in repr(ep) and key not in str(ep) and key not in f"{ep!r} {[ep]}"
    assert ep == remote_endpoint({"TRITON_URL": "h:8000"})  # the same addresses: the same server
