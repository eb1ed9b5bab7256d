"""Rate-trace files: CSV, JSON (a list, or Prometheus's matrix), arrival timestamps and perf_analyzer's intervals;
every mistake named with its file, line and fix."""
from __future__ import annotations

import json

import pytest

from loadgen.rate_trace.files import from_timestamps, from_trace_file, read_rate_csv, read_rate_file, read_rate_json
from loadgen.rate_trace.rate_trace import TraceError, describe
from tests.unit.loadgen.rate_trace.prometheus_example import PROMETHEUS_EXAMPLE


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
