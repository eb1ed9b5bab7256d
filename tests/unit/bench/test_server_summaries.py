"""bench/server_summaries.py's arithmetic: answers and the server's CPU per slice, and the steady end of a run."""
from __future__ import annotations

import pytest

from bench.server_summaries import slices, steady


def test_each_slice_counts_its_answers_and_the_cpu_between_its_edges():
    done = [0.1 * i for i in range(100)]  # 10 answers a second for 10 s
    # the server's CPU: 0.01 s a second for 5 s, then 0.02 s a second, sampled every half second
    cpu = [(0.5 * k, 0.01 * min(0.5 * k, 5.0) + 0.02 * max(0.0, 0.5 * k - 5.0)) for k in range(21)]
    rows = slices(done, cpu, 5.0, 10.0)
    assert [r["from_s"] for r in rows] == [0.0, 5.0]
    assert [r["answers_per_s"] for r in rows] == [10.0, 10.0]
    # 0.05 s of CPU for 50 answers: 1 ms each, 1,000 ms per 1,000; then twice that
    assert rows[0]["server_cpu_ms_per_1000"] == pytest.approx(1000.0)
    assert rows[1]["server_cpu_ms_per_1000"] == pytest.approx(2000.0)


def test_a_slice_without_cpu_samples_or_answers_has_no_cpu_figure():
    rows = slices([1.0], [], 5.0, 10.0)
    assert rows[0]["server_cpu_ms_per_1000"] is None and rows[1]["answers_per_s"] == 0.0


def test_the_steady_figures_are_the_last_slices_means():
    rows = [{"from_s": 5.0 * k, "answers_per_s": a, "server_cpu_ms_per_1000": c}
            for k, (a, c) in enumerate([(100.0, 50.0), (80.0, 90.0), (60.0, None), (70.0, 110.0)])]
    assert steady(rows, 10.0, 5.0) == {"answers_per_s": 65.0, "server_cpu_ms_per_1000": 110.0}
    assert steady(rows, 20.0, 5.0)["answers_per_s"] == pytest.approx(77.5)
