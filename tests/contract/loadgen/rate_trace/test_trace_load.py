"""A real run of a rate trace sends what the trace asks, step by step (the schedule's counts; its arithmetic on no
server: tests/unit/loadgen/rate_trace/test_trace_load.py)."""
from __future__ import annotations

import math

import pytest

from loadgen.rate_trace.trace_load import trace_load
from loadgen.spec import LoadSpec
from tests.contract.loadgen.serverkit import run_load

Z = 5.0  # a count is within Z Poisson standard deviations of its expectation: never by chance (p < 1e-6)


def count(times: list[float], t0: float, t1: float) -> int:
    return sum(t0 <= t < t1 for t in times)


def within(count: int, mean: float, what: str) -> None:
    assert abs(count - mean) <= Z * math.sqrt(mean) + 1, f"{what}: {count} arrivals, expected {mean:.0f}"


def test_a_real_run_sends_what_a_small_compressed_trace_asks(triton, tmp_path):
    path = tmp_path / "small.csv"  # 10 minutes: 40 req/s, then 160 req/s; compress 240 plays it in 2.5 s
    path.write_text("t,rate\n" + "".join(f"{t},{40 if t < 300 else 160}\n" for t in range(0, 600, 60)))
    spec = trace_load(LoadSpec(drain_s=2.0, seed=5), str(path), compress=240.0)
    assert spec.duration_s == pytest.approx(2.5) and spec.rate == pytest.approx(100.0)
    records, summary, _ = run_load(triton, spec)
    first = [r for r in records if r.attempt == 1]
    quiet, busy = count([r.scheduled_s for r in first], 0, 1.25), count([r.scheduled_s for r in first], 1.25, 2.5)
    within(quiet, 40 * 300 / 240, "the first 1.25 s (40 req/s recorded)")
    within(busy, 160 * 300 / 240, "the last 1.25 s (160 req/s recorded)")
    assert summary["all"]["ok"] == len(records), summary["all"]
