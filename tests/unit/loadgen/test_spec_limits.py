"""The table applied to whole loads: the arrival processes' peak rates, a streaming spec."""
from __future__ import annotations

import pytest

from loadgen.generate_stream import StreamSpec
from loadgen.spec_limits import check_stream, peak_rate
from loadgen.specfile import spec_from_dict

INF = float("inf")


def test_peak_rates_of_the_arrival_processes():
    spec = spec_from_dict({"arrival": {"kind": "bursty", "on_s": 0.5, "off_s": 1.5}})
    assert peak_rate(spec.arrival, 100.0) == pytest.approx(400.0)  # the mean over a cycle of 0.5 s on, 1.5 s off
    mmpp = spec_from_dict({"arrival": {"kind": "mmpp", "ratio": 10, "high_s": 1, "low_s": 4}}).arrival
    assert peak_rate(mmpp, 140.0) == pytest.approx(500.0)  # low = 140 * 5 / 14 = 50 req/s, high = 10 * low


def test_a_stream_spec_is_held_to_the_same_table():
    check_stream(StreamSpec())
    with pytest.raises(ValueError, match="concurrency = 1000"):
        check_stream(StreamSpec(concurrency=1000))
    with pytest.raises(ValueError, match="timeout_s = inf"):
        check_stream(StreamSpec(timeout_s=INF))
