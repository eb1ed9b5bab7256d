"""Request-rate traces: readers on small files, Prometheus's answer, playback statistics and the shipped traces.
Pure: no server, no clock; randomness from seeds."""
from __future__ import annotations

import itertools
import json
import math
import statistics

import pytest

from loadgen.rate_trace.rate_trace import RateTrace, TraceError, curve, describe, playback, rate_at
from loadgen.rate_trace.files import from_timestamps, from_trace_file, read_rate_csv, read_rate_file, read_rate_json
from loadgen.rate_trace.prometheus_range import fetch_rate_trace, promql_range_query
from loadgen.rate_trace.shipped import NAMES, SHIPPED, make_shipped_traces, shipped_trace

# Prometheus's own example answer to a range query, as its HTTP API documentation gives it
# (docs/querying/api.md, "Range queries": `up` over 30 s at a 15 s step).
PROMETHEUS_EXAMPLE = {
    "status": "success",
    "data": {
        "resultType": "matrix",
        "result": [
            {"metric": {"__name__": "up", "job": "prometheus", "instance": "localhost:9090"},
             "values": [[1435781430.781, "1"], [1435781445.781, "1"], [1435781460.781, "1"]]},
            {"metric": {"__name__": "up", "job": "node", "instance": "localhost:9091"},
             "values": [[1435781430.781, "0"], [1435781445.781, "0"], [1435781460.781, "1"]]},
        ],
    },
}


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def refused(call, *args, **kwargs) -> str:
    """Return the TraceError message of a call that must be refused."""
    with pytest.raises(TraceError) as info:
        call(*args, **kwargs)
    return str(info.value)


# --- readers ---------------------------------------------------------------------------------------------------

def test_csv_reads_rates_and_a_gap_holds_the_last_rate(tmp_path):
    trace = read_rate_csv(write(tmp_path, "t.csv", "t,rate\n# a comment\n0,10\n60,20.5\n\n180,5\n"))
    assert (trace.rates, trace.step_s, trace.classes) == ((10.0, 20.5, 20.5, 5.0), 60.0, {}), trace
    assert trace.source.endswith("t.csv")


def test_csv_reads_iso_times_with_and_without_a_zone(tmp_path):
    text = "t,rate\n2024-05-01T00:00:00Z,1\n2024-05-01T02:00:30+02:00,2\n2024-05-01T00:01:00,3\n"
    trace = read_rate_csv(write(tmp_path, "iso.csv", text))  # 00:00:30 UTC, then a naive time read as UTC
    assert (trace.rates, trace.step_s) == ((1.0, 2.0, 3.0), 30.0), trace


def test_csv_classes_sum_to_the_total_and_a_late_class_starts_at_zero(tmp_path):
    text = "t,rate,class\n0,10,chat\n10,12,chat\n10,3,batch\n20,11,chat\n30,4,batch\n"
    trace = read_rate_csv(write(tmp_path, "c.csv", text))
    assert trace.classes == {"chat": (10.0, 12.0, 11.0, 11.0), "batch": (0.0, 3.0, 3.0, 4.0)}, trace.classes
    assert trace.rates == (10.0, 15.0, 14.0, 15.0), trace.rates
    assert "2 classes (chat, batch)" in describe(trace)


@pytest.mark.parametrize("text, line, words", [
    ("t,rate\n0,10\n1,-3\n", 3, "negative"),
    ("t,rate\n0,10\n1,many\n", 3, "not a number"),
    ("t,rate\n0,nan\n1,2\n", 2, "not a finite number"),
    ("t,rate\n0,1\n1,inf\n", 3, "not a finite number"),
    ("t,rate\n0,1\n5,2\n3,1\n", 4, "sort the rows"),
    ("t,rate\n0,1\n0,2\n", 3, "sort the rows"),
    ("t,rate\n0,1\nyesterday,2\n", 3, "ISO-8601"),
    ("t,rate\n0,1\n1,2,3\n", 3, "3 values in a row"),
    ("time,value\n0,1\n", 1, "t,rate or t,rate,class"),
    ("t,rate\n0,1\n60,1\n100,1\n", 3, "one regular spacing"),
    ("t,rate\n0,1\n1,60000\n", 3, "divide the rates"),
    ("t,rate,class\n0,1,a\n1,2,\n", 3, "name the class"),
])
def test_csv_errors_name_the_file_the_line_and_the_fix(tmp_path, text, line, words):
    message = refused(read_rate_csv, write(tmp_path, "bad.csv", text))
    assert f"bad.csv:{line}:" in message and words in message, message


@pytest.mark.parametrize("text, words", [
    ("", "empty"),
    ("# only a comment\n", "empty"),
    ("t,rate\n", "no rows"),
    ("t,rate\n5,1\n", "two or more times"),
    ("t,rate\n0,1\n700000,1\n", "at most 7 days"),
    ("t,rate\n0,1\n0.5,1\n604800,1\n", "at most 604,801"),
])
def test_csv_whole_file_errors_name_the_file(tmp_path, text, words):
    message = refused(read_rate_csv, write(tmp_path, "bad.csv", text))
    assert "bad.csv" in message and words in message, message


def test_a_missing_file_is_named():
    message = refused(read_rate_csv, "/nonexistent/trace.csv")
    assert "/nonexistent/trace.csv" in message and "check the path" in message, message


def test_json_list_of_items(tmp_path):
    items = [{"t": 0, "rate": 5}, {"t": 2, "rate": "7.5"}, {"t": 6, "rate": 1}]
    trace = read_rate_json(write(tmp_path, "l.json", json.dumps(items)))
    assert (trace.rates, trace.step_s) == ((5.0, 7.5, 7.5, 1.0), 2.0), trace


def test_json_reads_prometheus_matrix_one_class_per_series(tmp_path):
    trace = read_rate_json(write(tmp_path, "prom.json", json.dumps(PROMETHEUS_EXAMPLE)))
    # Both job and instance differ between the two series, so both name a class.
    assert trace.classes == {"instance=localhost:9090,job=prometheus": (1.0, 1.0, 1.0),
                             "instance=localhost:9091,job=node": (0.0, 0.0, 1.0)}, trace.classes
    assert (trace.rates, trace.step_s) == ((1.0, 1.0, 2.0), 15.0), trace


def test_json_single_prometheus_series_has_no_classes(tmp_path):
    body = {**PROMETHEUS_EXAMPLE, "data": {**PROMETHEUS_EXAMPLE["data"],
                                           "result": PROMETHEUS_EXAMPLE["data"]["result"][:1]}}
    trace = read_rate_json(write(tmp_path, "one.json", json.dumps(body)))
    assert (trace.rates, trace.classes) == ((1.0, 1.0, 1.0), {}), trace


@pytest.mark.parametrize("body, words", [
    ("[{\"t\": 0, \"rate\": 1},\n {\"t\": 1 \"rate\": 2}]", "prom.json:2: not JSON"),
    ([{"t": 0, "rate": 1}, {"t": 1}], "item [1]"),
    ([{"t": 0, "rate": 1}, {"t": 1, "rate": -2}], "item [1]: rate -2 is negative"),
    ([{"t": 0, "rate": 1, "class": "a"}, {"t": 1, "rate": 2}], "give every item a class, or none"),
    ({"status": "error", "errorType": "bad_data", "error": "parse error at char 5"}, "parse error at char 5"),
    ({"status": "success", "data": {"resultType": "vector", "result": []}}, "not /api/v1/query"),
    ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "matched no series"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {}, "values": [[1, "1"], [2, "NaN"]]}]}}, "data.result[0].values[1]: rate 'NaN'"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"a": "1"}, "values": [[1, "1"]]}, {"metric": {"a": "1"}, "values": [[1, "1"]]}]}},
     "same labels"),
    ({"rates": [1, 2]}, "without a Prometheus status"),
])
def test_json_errors_name_the_file_and_the_place(tmp_path, body, words):
    path = write(tmp_path, "prom.json", body if isinstance(body, str) else json.dumps(body))
    message = refused(read_rate_json, path)
    assert "prom.json" in message and words in message, message


def test_from_timestamps_counts_per_step():
    trace = from_timestamps([10.0, 10.1, 10.2, 10.6, 11.9, 13.0], step_s=0.5)
    # Steps from 10.0: [10, 10.5) 3, [10.5, 11) 1, 0, [11.5, 12) 1, 0, 0, [13, 13.5) 1; each ÷ 0.5 s.
    assert trace.rates == (6.0, 2.0, 0.0, 2.0, 0.0, 0.0, 2.0), trace.rates
    assert from_timestamps([10.6, 11.9], step_s=1.0, start=9.0).rates == (0.0, 1.0, 1.0)


def test_from_timestamps_refuses_unsorted_and_bad_steps():
    message = refused(from_timestamps, [0.0, 2.0, 1.0], source="log.txt")
    assert "log.txt" in message and "arrival [2]" in message and "sort the times" in message, message
    assert "positive" in refused(from_timestamps, [0.0], step_s=0)
    assert "no arrivals" in refused(from_timestamps, [])


def test_from_trace_file_reads_perf_analyzer_intervals(tmp_path):
    path = write(tmp_path, "intervals.txt", "250000\n250000\n250000\n250000\n1000000\n")  # µs between sends
    trace = from_trace_file(path)  # arrivals at 0.25, 0.5, 0.75, 1.0, 2.0 s, counted from the run's start at 0
    assert trace.rates == (3.0, 1.0, 1.0), trace.rates


def test_read_rate_file_chooses_the_reader_by_suffix(tmp_path):
    csv_path = write(tmp_path, "a.csv", "t,rate\n0,1\n1,2\n")
    json_path = write(tmp_path, "a.json", json.dumps(PROMETHEUS_EXAMPLE))
    intervals = write(tmp_path, "a.txt", "500000\n500000\n")
    rates = [read_rate_file(p).rates for p in (csv_path, json_path, intervals)]
    assert rates == [(1.0, 2.0), (1.0, 1.0, 2.0), (1.0, 1.0)], rates  # sends at 0.5 and 1.0 s


# --- Prometheus -------------------------------------------------------------------------------------------------

class FakeResponse:
    def __init__(self, body, status_code: int = 200):
        self.body, self.status_code = body, status_code

    def json(self):
        if isinstance(self.body, Exception):
            raise self.body
        return self.body


class FakeClient:
    """Records each get and answers with a fixed response (or raises)."""

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def get(self, url, params=None, timeout=None):
        self.calls.append((url, params, timeout))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_range_query_builds_prometheus_parameters():
    path, params = promql_range_query(" rate(x[1m]) ", "2015-07-01T20:10:30.781Z", 1435781460.781, "15s")
    assert path == "/api/v1/query_range"
    assert params == {"query": "rate(x[1m])", "start": "1435781430.781", "end": "1435781460.781", "step": "15"}
    assert promql_range_query("up", 0, 86_400, "1h30m")[1]["step"] == "5400"


@pytest.mark.parametrize("args, words", [
    (("", 0, 60, 15), "query is empty"),
    (("up", 60, 0, 15), "must come after start"),
    (("up", 0, 8 * 86_400, 3600), "at most 7 days"),
    (("up", 0, 86_400, 1), "use a step of at least 8 s"),
    (("up", 0, 60, "fast"), "duration like 15s"),
    (("up", 0, 60, 0), "positive"),
])
def test_range_query_refusals_say_the_fix(args, words):
    message = refused(promql_range_query, *args)
    assert words in message, message


def test_fetch_asks_the_range_query_and_reads_the_answer():
    client = FakeClient(FakeResponse(PROMETHEUS_EXAMPLE))
    trace = fetch_rate_trace("http://prom:9090/", "up", 1435781430.781, 1435781460.781, 15, client, timeout_s=7)
    url, params, timeout = client.calls[0]
    assert (url, params["query"], params["step"], timeout) == ("http://prom:9090/api/v1/query_range", "up", "15", 7)
    assert trace.rates == (1.0, 1.0, 2.0) and "prom:9090" in trace.source, trace


@pytest.mark.parametrize("base_url, answer, words", [
    ("ftp://prom:9090", None, "http:// or https://"),
    ("prom:9090", None, "http:// or https://"),
    ("http://prom:9090", ConnectionError("refused"), "did not answer: refused"),
    ("http://prom:9090", FakeResponse(ValueError("no json"), 502), "HTTP 502 without JSON"),
    ("http://prom:9090", FakeResponse({"status": "error", "errorType": "execution", "error": "timeout"}, 503),
     "Prometheus refused the query (execution): timeout"),
])
def test_fetch_refusals_say_why(base_url, answer, words):
    client = FakeClient(answer)
    message = refused(fetch_rate_trace, base_url, "up", 0, 60, 15, client)
    assert words in message, message
    assert not client.calls or answer is not None  # a bad URL is refused before any request


# --- playback ---------------------------------------------------------------------------------------------------

def counts_per_step(offsets: list[float], step: float, steps: int) -> list[int]:
    counts = [0] * steps
    for t in offsets:
        counts[int(t // step)] += 1
    return counts


def test_poisson_playback_has_each_steps_rate_and_poisson_spread():
    trace = RateTrace((40.0,) * 2000, 1.0)
    offsets = playback(trace, compress=4, scale=1, seed=3)
    counts = counts_per_step(offsets, 0.25, 2000)
    mean, var = statistics.fmean(counts), statistics.pvariance(counts)
    # Expected 40 req/s × 0.25 s = 10 a step. The mean of 2000 Poisson(10) counts has sd sqrt(10/2000) = 0.071:
    # 5 sd is 0.35. Their variance/mean is 1 for Poisson (0 for even spacing) with sd ≈ sqrt(2/2000) = 0.032.
    assert abs(mean - 10) < 5 * math.sqrt(10 / 2000), f"mean count a step {mean}"
    assert abs(var / mean - 1) < 5 * math.sqrt(2 / 2000), f"variance/mean {var / mean}"
    # Memoryless inside each step: the wait from a step's start to its first arrival is exponential, mean and sd
    # 1/40 s (P(no arrival in a step) = e^-10 is negligible); the mean of 2000 has sd 0.025/sqrt(2000), and
    # their sd/mean (1 for the exponential, 0 for a fixed first gap) has sd about 0.03.
    firsts = {}
    for t in offsets:
        firsts.setdefault(int(t // 0.25), t % 0.25)
    waits = list(firsts.values())
    assert abs(statistics.fmean(waits) - 0.025) < 5 * 0.025 / math.sqrt(len(waits)), statistics.fmean(waits)
    assert 0.85 < statistics.pstdev(waits) / statistics.fmean(waits) < 1.15, statistics.pstdev(waits)


def test_playback_honours_compress_scale_and_each_steps_own_rate():
    trace = RateTrace((20.0,) * 1000 + (80.0,) * 1000, 1.0)
    offsets = playback(trace, compress=2, scale=1.5, seed=5)
    assert offsets == sorted(offsets) and 0 <= offsets[0] and offsets[-1] < 1000, (offsets[0], offsets[-1])
    low, high = sum(t < 500 for t in offsets), sum(t >= 500 for t in offsets)
    # Each half plays 500 s: 20 × 1.5 = 30 req/s → 15,000 expected, 80 × 1.5 = 120 → 60,000; Poisson sd = sqrt.
    for measured, expected in ((low, 15_000), (high, 60_000)):
        assert abs(measured - expected) < 5 * math.sqrt(expected), f"{measured} arrivals, expected {expected}"


def test_playback_is_deterministic_for_a_seed():
    trace = RateTrace((5.0, 50.0, 0.0, 20.0), 2.0)
    assert playback(trace, 1, 1, seed=11) == playback(trace, 1, 1, seed=11)
    assert playback(trace, 1, 1, seed=11) != playback(trace, 1, 1, seed=12)
    assert not [t for t in playback(trace, 1, 1, seed=11) if 4 <= t < 6], "a step at rate 0 sent requests"


def test_uniform_playback_gives_exact_counts_evenly_spaced():
    trace = RateTrace((10.0, 30.0, 0.0, 20.0), 1.0)
    for compress, scale in ((1, 1), (2, 2)):  # a step of 0.5 s at twice the rate holds as many arrivals
        step = 1.0 / compress
        offsets = playback(trace, compress, scale, mode="uniform")
        assert counts_per_step(offsets, step, 4) == [10, 30, 0, 20], (compress, scale, offsets)
        second = [t for t in offsets if step <= t < 2 * step]
        gaps = {round(b - a, 12) for a, b in zip(second, second[1:])}
        assert gaps == {round(step / 30, 12)}, gaps


def test_uniform_playback_carries_fractions_across_steps():
    trace = RateTrace((2.5,) * 8, 1.0)  # 2.5 a step: 20 in all, never 16 or 24 from rounding each step
    counts = counts_per_step(playback(trace, mode="uniform"), 1.0, 8)
    assert sum(counts) == 20 and set(counts) == {2, 3}, counts


@pytest.mark.parametrize("kwargs, words", [
    ({"compress": 0}, "compress = 0"),
    ({"compress": 2000}, "compress = 2000"),
    ({"scale": 0}, "scale = 0"),
    ({"scale": -1}, "scale = -1"),
    ({"mode": "bursty"}, "poisson or uniform"),
    ({"compress": 1}, "use compress 24 or more"),
    ({"compress": 24, "scale": 100}, "use scale 50 or less"),
    ({"compress": 24, "scale": 40}, "raise compress to 34.6 or lower scale to 27.8"),
])
def test_playback_refuses_what_the_limits_table_refuses(kwargs, words):
    trace = RateTrace((100.0,) * 1440, 60.0)  # a day at 100 req/s
    message = refused(playback, trace, **{"compress": 144, **kwargs})
    assert words in message, message


def test_rate_at_and_curve_follow_the_played_steps():
    trace = RateTrace((10.0, 30.0, 20.0), 60.0)
    played = [rate_at(trace, t, compress=60, scale=2) for t in (-0.1, 0.0, 0.99, 1.0, 2.5, 3.0)]
    assert played == [0.0, 20.0, 20.0, 60.0, 40.0, 0.0], played
    assert curve(trace, 60, 2) == [(0.0, 20.0), (1.0, 60.0), (2.0, 40.0), (3.0, 40.0)]


def test_describe_says_span_step_range_and_mean():
    trace = RateTrace((40.0,) * 720 + (580.0,) * 719 + (900.0,), 60.0)
    assert describe(trace) == "24 h at 1 min steps, 40–900 req/s, mean 310 req/s", describe(trace)
    assert describe(RateTrace((0.5, 2.0), 10.0)) == "20 s at 10 s steps, 0.5–2 req/s, mean 1.2 req/s"


def test_a_trace_refuses_bad_rates_by_index():
    message = refused(RateTrace, (1.0, float("nan")), 1.0, source="made")
    assert "made: rates[1]" in message, message
    assert "class 'a' has 1 steps" in refused(RateTrace, (1.0, 2.0), 1.0, classes={"a": (1.0,)})


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
