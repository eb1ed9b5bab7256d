"""A fleet named in TBL_FLEET: each replica's addresses in Triton's port layout."""
from __future__ import annotations

import pytest

from app.config.fleet import fleet_replicas


def test_a_fleet_is_read_from_tbl_fleet_with_triton_s_port_layout():
    (b,) = fleet_replicas({"TBL_FLEET": "http://127.0.0.1:9000"})
    assert (b.name, b.endpoint.grpc_url, b.endpoint.metrics_url) == ("127.0.0.1:9000", "127.0.0.1:9001",
                                                                     "http://127.0.0.1:9002/metrics")
    assert fleet_replicas({}) == []
    with pytest.raises(ValueError, match="http://HOST:PORT"):
        fleet_replicas({"TBL_FLEET": "ftp://x"})
