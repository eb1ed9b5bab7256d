"""GPU gauges per GPU (hand-written fixture: this CPU-only server exports none), memory per instance, fit."""
from __future__ import annotations

from pathlib import Path

import pytest

from app.metrics.gpu import Gpu, gpus_of, memory_per_instance, next_instance_fits

FIXTURES = Path(__file__).parent / "fixtures"
GIB = 2**30


def test_each_gpu_is_read_with_its_gauges():
    first, second = gpus_of((FIXTURES / "gpu_lines.prom").read_text())
    assert first.uuid.endswith("0001") and second.uuid.endswith("0002")
    assert (first.utilization, first.memory_used, first.memory_total) == (0.25, 1e9, 42949672960.0)
    assert (second.power_w, second.power_limit_w) == (310.0, 400.0)
    assert second.memory_free == 42949672960.0 - 3e9


def test_a_cpu_server_reports_no_gpu():
    assert gpus_of((FIXTURES / "s1_after_200.prom").read_text()) == []


def test_memory_per_instance_is_the_slope_over_instance_counts():
    assert memory_per_instance({1: 3 * GIB}) is None  # one count says nothing about the next instance
    assert memory_per_instance({1: 3 * GIB, 2: 5 * GIB, 4: 9 * GIB}) == pytest.approx(2 * GIB)  # 1 GiB base + 2/instance


def test_the_next_instance_must_fit_in_the_free_memory_of_a_gpu_it_may_use():
    gpus = [Gpu("a", memory_used=15 * GIB, memory_total=16 * GIB), Gpu("b", memory_used=4 * GIB, memory_total=16 * GIB)]
    assert next_instance_fits(gpus, 2 * GIB) is None  # GPU b has 12 GiB free
    warning = next_instance_fits(gpus, 2 * GIB, devices=(0,))  # pinned to GPU a: 1 GiB free
    assert warning and "2.00 GiB" in warning and "1.00 GiB" in warning
    assert next_instance_fits(gpus, None) is None and next_instance_fits([], 2 * GIB) is None
