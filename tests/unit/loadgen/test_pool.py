"""The pool's server address: host and port from a URL, plain http only (the pool itself against a socket:
tests/contract/loadgen/test_pool.py)."""
from __future__ import annotations

import pytest

from loadgen.pool import host_port


def test_urls():
    assert host_port("http://example:8000/") == ("example", 8000)
    assert host_port("localhost:9") == ("localhost", 9)
    with pytest.raises(ValueError, match="plain http"):
        host_port("https://secure:443")
