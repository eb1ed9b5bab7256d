"""One rule turns an environment switch on, for every switch the lab reads (the server's latency summaries, the
dashboard's viewer mode)."""
from __future__ import annotations

import pytest

from app.server.embedded import SUMMARIES_VARIABLE, metrics_flags
from app.switches import switched_on

SUMMARIES = "--metrics-config=summary_latencies=true"


@pytest.mark.parametrize("value", ["1", "true", "TRUE", " yes ", "On"])
def test_these_turn_a_switch_on(value):
    assert switched_on("X", {"X": value}), value
    assert SUMMARIES in metrics_flags({SUMMARIES_VARIABLE: value}), value


@pytest.mark.parametrize("value", ["", "0", "false", "off", "no", "enabled", "2"])
def test_anything_else_or_nothing_leaves_it_off(value):
    assert not switched_on("X", {"X": value}), value
    assert not switched_on("X", {}), "unset"
    assert SUMMARIES not in metrics_flags({SUMMARIES_VARIABLE: value}), value
