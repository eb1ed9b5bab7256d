"""The field guide's retry storm, reproduced and cured on the real server; example specs load."""
from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.spec import LoadSpec, Mode, RetryKind, RetryPolicy, TrafficClass
from loadgen.specfile import load_spec
from tests.loadgen.serverkit import reload_with, run_load

EXAMPLES = Path(__file__).resolve().parents[2] / "loadgen" / "examples"


def slow_device(config):
    config.parameters["compute_us_batch1"].string_value = "20000"  # ~30 ms a batch: light on the CPU


def offered(cls: TrafficClass) -> LoadSpec:
    return LoadSpec(mode=Mode.OPEN, rate=120.0, duration_s=2.0, drain_s=3.0, seed=7, classes=(cls,))


def test_retry_storm_then_cure(triton, restore_model):
    restore_model("gpu_sim")
    reload_with(triton, "gpu_sim", slow_device)
    storm = TrafficClass("web", timeout_ms=25, sla_ms=250, retry=RetryPolicy(RetryKind.IMMEDIATE, max_attempts=5))
    cure = TrafficClass("web", timeout_ms=500, sla_ms=250,
                        retry=RetryPolicy(RetryKind.BACKOFF, max_attempts=2, base_ms=100, cap_ms=1000))
    _, healed, _ = run_load(triton, offered(cure))  # first: a storm leaves a backlog in the server
    _, sick, _ = run_load(triton, offered(storm))
    sick, healed = sick["web"], healed["web"]
    # Storm: every request is sent again and again while the server still works on the abandoned ones.
    assert sick["sent"] >= 3 * sick["requests"] and sick["retries"] > 0
    assert sick["goodput_rps"] < 0.2 * 120
    # Cure: the timeout is above the latency, retries are rare and spaced, goodput follows the offer.
    assert healed["sent"] <= 1.1 * healed["requests"] and healed["goodput_rps"] > 0.7 * 120 * 2 / healed["elapsed_s"]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_example_specs_load(path):
    spec = load_spec(path)
    assert spec.classes or spec.sequences
