"""Arrival processes of the twin: statistical checks with an injected rng, no server."""
from __future__ import annotations

from random import Random

import numpy as np
import pytest

from app.twin import Load, ClassShare
from app.twin.load import arrivals


def test_poisson_has_the_rate_and_exponential_gaps():
    times, _ = arrivals(Load.poisson(500.0, 40.0), Random(1))
    gaps = np.diff(times)
    assert abs(len(times) / 20_000 - 1) < 0.03, f"{len(times)} arrivals in 40 s at 500/s"
    assert abs(gaps.std() / gaps.mean() - 1) < 0.05, f"gap cv {gaps.std() / gaps.mean():.3f}, exponential is 1"


def test_bursty_keeps_the_mean_rate_and_clumps():
    load = Load.bursty(200.0, 200.0, ratio=8.0, burst_s=0.2, quiet_s=1.0)
    times, _ = arrivals(load, Random(2))
    counts = np.bincount((times / 0.1).astype(int))  # arrivals per 100 ms
    dispersion = counts.var() / counts.mean()
    assert abs(len(times) / (200.0 * 200.0) - 1) < 0.1, f"{len(times)} arrivals, mean rate {len(times) / 200:.1f}/s"
    assert dispersion > 3, f"index of dispersion {dispersion:.2f} per 100 ms: Poisson gives 1, bursts more"


def test_a_rate_trace_steps():
    times, _ = arrivals(Load.trace([(0.0, 100.0), (10.0, 1000.0), (20.0, 0.0)], 30.0), Random(3))
    per_step = np.histogram(times, bins=[0, 10, 20, 30])[0]
    assert abs(per_step[0] / 1000 - 1) < 0.1 and abs(per_step[1] / 10_000 - 1) < 0.04 and per_step[2] == 0, per_step


def test_classes_take_their_shares():
    load = Load.poisson(1000.0, 20.0).with_classes(ClassShare("a", 1.0), ClassShare("b", 3.0))
    _, cls = arrivals(load, Random(4))
    assert abs(np.mean(cls == 0) - 0.25) < 0.01, f"class a took {np.mean(cls == 0):.3f} of the arrivals, share 0.25"
    closed = Load.closed(10, 5.0).with_classes(ClassShare("a", 1.0), ClassShare("b", 2.0))
    assert closed.clients() == [3, 7], closed.clients()


def test_replay_keeps_the_times_and_the_same_rng_the_same_arrivals():
    assert list(arrivals(Load.replay([0.3, 0.1, 0.2]), Random(0))[0]) == [0.1, 0.2, 0.3]
    a, b = arrivals(Load.poisson(100.0, 5.0), Random(9))[0], arrivals(Load.poisson(100.0, 5.0), Random(9))[0]
    assert np.array_equal(a, b), "the same seed gave different arrivals"


def test_loads_refuse_what_cannot_run():
    with pytest.raises(ValueError):
        Load.poisson(0.0, 10.0)
    with pytest.raises(ValueError):
        Load.closed(0, 10.0)
    with pytest.raises(ValueError):
        Load.poisson(10.0, 5.0, warmup_s=5.0)
