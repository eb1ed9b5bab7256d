"""Streaming generations' figures on hand-made records: requests counted by when they finished, percentiles of the
samples; a spec needs someone in flight. Against the real server: tests/contract/loadgen/test_generate_stream.py."""
from __future__ import annotations

import pytest

from loadgen.generate_stream import StreamRecord, StreamSpec, stream_figures

WINDOW = (1.0, 3.0)
RECORDS = [  # sent, first token, done, tokens, expected, error
    StreamRecord(0.5, 0.6, 1.5, 10, 10),  # sent before the window, finished in it: counted whole
    StreamRecord(1.0, 1.2, 2.0, 5, 5),
    StreamRecord(2.0, 2.1, 2.9, 4, 4),
    StreamRecord(2.5, None, 2.6, 0, 8, "HTTP 404: unknown model"),
    StreamRecord(0.1, 0.2, 0.9, 3, 3),  # finished before the window
    StreamRecord(2.5, 2.6, 3.0, 6, 6),  # finished at its end: the window is half-open
]


def test_figures_count_requests_finished_in_the_window():
    f = stream_figures(RECORDS, *WINDOW)
    assert (f["n"], f["failures"], f["window_s"]) == (4, 1, 2.0)
    assert f["requests_per_s"] == pytest.approx(3 / 2)
    assert f["tokens_per_s"] == pytest.approx((10 + 5 + 4) / 2)  # the OK requests' tokens only


def test_figures_take_percentiles_of_the_samples():
    f = stream_figures(RECORDS, *WINDOW)
    # TTFT samples 100, 200, 100 ms; e2e 1000, 1000, 900 ms; per output token 900/9, 800/4, 800/3 ms.
    assert f["ttft_p50_ms"] == pytest.approx(100)
    assert f["ttft_p99_ms"] == pytest.approx(198)  # between the two highest samples, numpy's linear rule
    assert f["e2e_p50_ms"] == pytest.approx(1000)
    assert f["e2e_p99_ms"] == pytest.approx(1000)
    assert f["tpot_p50_ms"] == pytest.approx(200)


def test_an_empty_window_has_no_percentiles():
    f = stream_figures(RECORDS, 10.0, 11.0)
    assert (f["n"], f["tokens_per_s"], f["ttft_p99_ms"], f["tpot_p50_ms"]) == (0, 0.0, None, None)


def test_a_spec_needs_someone_in_flight():
    with pytest.raises(ValueError, match="concurrency"):
        StreamSpec(concurrency=0)
