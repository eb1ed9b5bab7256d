"""A config text over 256 KiB is refused before the server is asked (app.text_limits: the raw editor, Apply, preview)."""
from __future__ import annotations

import pytest

from app.config.apply import ConfigService
from app.config.errors import ConfigValidationError
from app.config.history import ConfigHistory
from app.server.endpoint import Endpoint
from app.text_limits import MAX_CONFIG_CHARS

CONFIG = 'name: "m"\nbackend: "python"\nmax_batch_size: 8\n'
NOWHERE = Endpoint("http://127.0.0.1:9", "127.0.0.1:9", "http://127.0.0.1:9/metrics")  # nothing answers there


def test_a_config_text_over_256_kib_is_refused_before_the_server_is_asked(tmp_path):
    service = ConfigService(NOWHERE, tmp_path, history=ConfigHistory(tmp_path / "history"))
    huge = CONFIG + "#" * MAX_CONFIG_CHARS
    for call in (service.apply_text, service.text_preview):
        with pytest.raises(ConfigValidationError, match="config.pbtxt: the config text is 262,190 characters"):
            call("m", huge)
