"""Trace files: perf_analyzer's request intervals, gaps and timestamps."""
from __future__ import annotations

import pytest

from loadgen.trace import mean_rate, read_trace, write_intervals


def test_reads_perf_analyzer_intervals_in_microseconds(tmp_path):
    path = tmp_path / "intervals.txt"
    path.write_text("1000\n2500\n# a comment\n\n500\n")
    assert read_trace(path) == pytest.approx([0.001, 0.0025, 0.0005])


def test_timestamps_become_gaps_with_the_first_arrival_at_once(tmp_path):
    path = tmp_path / "ts.csv"
    path.write_text("10.0,GET\n10.5,GET\n12.0,GET\n")
    assert read_trace(path, "timestamps_s") == pytest.approx([0.0, 0.5, 1.5])


def test_write_then_read_round_trips(tmp_path):
    path = tmp_path / "out.txt"
    write_intervals(path, [0.001, 0.02])
    assert path.read_text() == "1000\n20000\n"
    assert read_trace(path) == pytest.approx([0.001, 0.02])
    assert mean_rate([0.25, 0.25]) == 4.0


@pytest.mark.parametrize("text, fmt", [("1\nx\n", "intervals_us"), ("", "gaps_s"), ("2\n1\n", "timestamps_s")])
def test_bad_traces_say_what_is_wrong(tmp_path, text, fmt):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match="bad.txt"):
        read_trace(path, fmt)


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="intervals_us"):
        read_trace(tmp_path / "x", "weird")
