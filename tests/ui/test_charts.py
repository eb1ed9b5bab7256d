"""Chart helpers: the latency axis stays readable around a spike."""
from __future__ import annotations

from app.ui.charts import latency, spike_cap


def test_a_lone_spike_caps_the_axis_and_even_values_do_not():
    flat = [10.0 + i % 3 for i in range(60)]
    assert spike_cap(flat) is None
    spiky = flat + [1900.0]
    assert spike_cap(spiky) == 24.0  # twice the 90th percentile
    assert spike_cap(spiky, sla_ms=50.0) == 75.0  # the SLA line stays in view
    assert spike_cap([5.0, 900.0]) is None  # too few points to call one a spike


def test_the_latency_chart_names_the_cap_and_draws_the_sla():
    rows = [{"t": 1000.0 + i, "cls": "all", "p50_ms": 5.0, "p99_ms": 1900.0 if i == 30 else 9.0, "latency_n": 100}
            for i in range(60)]
    spec = latency([], rows, [], sla_ms=50.0).to_dict()
    text = str(spec)
    assert "axis capped at 75 ms (a spike reached 1,900 ms)" in text and "SLA 50 ms" in text


def test_series_break_at_missing_readings_and_long_gaps():
    from app.ui.frames import series  # noqa: PLC0415

    rows = [{"t": 100.0, "p99_ms": 5.0}, {"t": 101.0, "p99_ms": None}, {"t": 102.0, "p99_ms": 6.0},
            {"t": 110.0, "p99_ms": 7.0}]
    frame = series(rows, ("p99_ms",))
    empty = frame["value"].isna().tolist()
    assert empty == [False, True, False, True, False]  # the missing reading, and a break between 102 s and 110 s
    assert frame["time"][3].timestamp() == 103.0 and frame["value"][4] == 7.0


def test_gaps_do_not_confuse_the_spike_cap():
    assert spike_cap([10.0] * 20 + [float("nan")] * 5 + [1900.0]) == 20.0
