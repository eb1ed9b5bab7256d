"""The shipped traces: exactly what their generator writes, with the shapes their README promises."""
from __future__ import annotations

import itertools
import math
import statistics

from loadgen.rate_trace.rate_trace import RateTrace, playback
from loadgen.rate_trace.shipped import NAMES, SHIPPED, make_shipped_traces, shipped_trace


# --- shipped traces -------------------------------------------------------------------------------------------------

def test_shipped_files_are_what_the_generator_writes():
    made = make_shipped_traces()
    for name in NAMES:
        read = shipped_trace(name)
        assert (read.rates, read.step_s) == (made[name].rates, made[name].step_s), name
        assert f"{name}.csv" in (SHIPPED / "README.md").read_text(), name


def hourly_medians(trace: RateTrace) -> list[float]:
    per_hour = int(3600 / trace.step_s)
    return [statistics.median(trace.rates[i:i + per_hour]) for i in range(0, len(trace.rates), per_hour)]


def test_diurnal_has_night_trough_midday_peak_and_short_bursts():
    trace = shipped_trace("diurnal")
    assert (len(trace.rates), trace.step_s) == (1440, 60.0)
    hours = hourly_medians(trace)
    trough, peak = min(hours[0:4]), max(hours[11:16])
    assert 30 <= trough <= 50 and 260 <= peak <= 340 and peak / trough >= 5, (trough, peak, hours)
    # A burst minute: at least 1.5× the median of its hour (4 % noise never gets there). Runs of them are bursts.
    minutes = [r >= 1.5 * hours[i // 60] for i, r in enumerate(trace.rates)]
    runs = [len(list(g)) for key, g in itertools.groupby(minutes) if key]
    assert len(runs) == 4 and all(10 <= n <= 20 for n in runs), runs
    assert trace.peak <= 650, f"peak {trace.peak} req/s: above what gpu_sim serves on 2 cores"


def test_flash_crowd_jumps_within_30_s_holds_about_5_min_and_decays():
    trace = shipped_trace("flash_crowd")
    assert (len(trace.rates), trace.step_s) == (360, 10.0)
    rates = trace.rates
    steady = statistics.median(rates[:90])  # the first 15 minutes
    assert 70 <= steady <= 90, steady
    first_high = next(i for i, r in enumerate(rates) if r >= 350)
    last_low = max(i for i in range(first_high) if rates[i] < 120)
    assert (first_high - last_low) * 10 <= 30, (last_low, first_high, rates[last_low:first_high + 1])
    # Above 300 req/s: the 5-minute hold, then the decay from 400 with τ = 300 s for 300 ln(320/220) = 112 s.
    above = sum(r >= 300 for r in rates) * 10
    assert 330 <= above <= 480, f"{above} s above 300 req/s"
    assert statistics.median(rates[-30:]) < 120 and trace.peak <= 500, (rates[-30:], trace.peak)


def test_shipped_traces_play_at_the_suggested_compress():
    for name, compress in (("diurnal", 144), ("flash_crowd", 6)):
        trace = shipped_trace(name)
        offsets = playback(trace, compress=compress, seed=1)
        expected = trace.mean * trace.duration_s / compress
        assert abs(len(offsets) - expected) < 5 * math.sqrt(expected), (name, len(offsets), expected)
        assert offsets[-1] < 600, (name, offsets[-1])
