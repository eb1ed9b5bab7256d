"""Reading /metrics where nothing listens: an OSError the poller turns into a down row."""
from __future__ import annotations

import pytest

from app.metrics.scrape import fetch_text
from app.server.free_ports import free_port


def test_fetch_text_raises_oserror_when_nothing_listens():
    with pytest.raises(OSError):
        fetch_text(f"http://127.0.0.1:{free_port()}/metrics", timeout_s=1)
