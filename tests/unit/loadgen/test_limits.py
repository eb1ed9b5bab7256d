"""The one table of load bounds in the load generator itself: a spec outside it, nan and infinity are refused naming
the field, the value and the range (the CLI's refusals: test_cli.py; the worker's: test_worker.py)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from loadgen.limits import LIMITS, Limit, check_finite, nonfinite
from loadgen.spec import LoadSpec, SequenceSpec, TrafficClass
from loadgen.specfile import spec_from_dict

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("data, words", [
    ({"concurrency": 1000}, "concurrency = 1000: concurrency must be between 0 and 256"),
    ({"concurrency": 1_000_000}, "concurrency = 1000000: concurrency must be between 0 and 256"),
    ({"mode": "open", "rate": 1e9}, "rate = 1000000000.0: rate (req/s) must be between 0 and 5000"),
    ({"duration_s": 1e9}, "duration_s = 1000000000.0: duration (s) must be positive and at most 3600"),
    ({"max_requests": 10**12}, "max_requests = 1000000000000: request count must be between 1 and 10000000"),
    ({"max_connections": 100_000}, "max_connections = 100000: connections must be between 1 and 1024"),
    ({"classes": [{"name": f"c{i}"} for i in range(17)]}, "classes + sequences = 17"),
    ({"classes": [], "sequences": [{"count": 200}]}, "sequences[0].count = 200: concurrent sequences"),
    ({"concurrency": 200, "sequences": [{"count": 64}]}, "concurrency + sequences = 264: requests in flight"),
    ({"classes": [{"timeout_ms": 1e9}]}, "classes[0].timeout_ms = 1000000000.0: client timeout (ms)"),
    ({"classes": [{"sla_ms": 1e9}]}, "classes[0].sla_ms = 1000000000.0: SLA (ms)"),
    ({"mode": "open", "rate": 3000, "classes": [{"name": "a"}, {"name": "b", "rate": 3000}]},
     "the whole load's rate (the shared stream's and the classes' own) = 6000.0"),
    ({"mode": "open", "rate": 1000, "arrival": {"kind": "step", "steps": [[1, 1], [1, 1000]]}},
     "arrival at 1000 req/s: its peak = 1000000.0: peak rate (req/s) must be between 0 and 50000"),
    ({"classes": [{"retry": {"kind": "backoff", "max_attempts": 1000}}]}, "classes[0].retry.max_attempts = 1000"),
    ({"classes": [{"shape": {"batch": 100_000}}]}, "classes[0].shape.batch = 100000: rows per request"),
    ({"classes": [{"shape": {"kind": "uniform", "dims": [-1, 4096], "low": 1, "high": 1_000_000}}]},
     "classes[0].shape.dims [-1, 4096] × batch 1 = 4096000000: values of one input in one request"),
    ({"classes": [{"string_len": [1, 10**9]}]}, "classes[0].string_len (longest) = 1000000000"),
    ({"classes": [{"name": "x" * 5000}]}, "classes[0].name is 5,000 characters"),
])
def test_a_spec_outside_the_table_is_refused_naming_the_field_value_and_range(data, words):
    with pytest.raises(ValueError) as refused:
        spec_from_dict(data)
    assert words in str(refused.value), str(refused.value)


@pytest.mark.parametrize("data, path", [
    ({"rate": NAN}, "rate = nan: rate (req/s) must be a finite number"),
    ({"duration_s": INF}, "duration_s = inf: duration (s) must be a finite number"),
    ({"arrival": {"kind": "bursty", "on_s": NAN}}, "arrival.on_s = nan"),
    ({"arrival": {"kind": "step", "steps": [[1, INF]]}}, "arrival.steps[0][1] = inf"),
    ({"classes": [{"sla_ms": NAN}]}, "classes[0].sla_ms = nan: SLA (ms) must be a finite number"),
    ({"classes": [{"retry": {"base_ms": -INF}}]}, "classes[0].retry.base_ms = -inf"),
    ({"classes": [{"rate": NAN}]}, "classes[0].rate = nan"),
    ({"classes": [], "sequences": [{"think_ms": NAN}]}, "sequences[0].think_ms = nan"),
    ({"warmup_s": NAN}, "warmup_s = nan"),
])
def test_nan_and_infinity_are_refused_everywhere_in_a_spec(data, path):
    with pytest.raises(ValueError, match="must be a finite number, not nan or infinity") as refused:
        spec_from_dict(data)
    assert path in str(refused.value), str(refused.value)


def test_json_nan_as_the_worker_reads_it_is_refused():
    data = json.loads('{"mode": "open", "rate": NaN}')  # Python's json reads NaN and Infinity
    with pytest.raises(ValueError, match="rate = nan"):
        spec_from_dict(data)


def test_a_running_spec_changed_out_of_bounds_is_refused():
    """The controller changes a running load with dataclasses.replace: the same validate refuses it."""
    spec = LoadSpec()
    with pytest.raises(ValueError, match="concurrency = 1000"):
        dataclasses.replace(spec, concurrency=1000)
    with pytest.raises(ValueError, match="rate = inf"):
        dataclasses.replace(spec, rate=INF)


def test_the_table_keeps_every_default_and_its_extremes_inside():
    assert LoadSpec() and LoadSpec(concurrency=256, duration_s=3600, max_connections=1024)
    LoadSpec(mode="open", rate=5000, classes=(TrafficClass(timeout_ms=600_000, sla_ms=30_000),))
    LoadSpec(classes=(), concurrency=0, sequences=(SequenceSpec(count=64),))
    for limit in LIMITS.values():
        assert limit.fits(limit.high) and not limit.fits(limit.high * 2 + 1) and not limit.fits(NAN)


def test_a_limit_words_its_refusals_for_the_form_and_for_a_spec():
    rate = Limit("rate (req/s)", 1, 5000)
    assert rate.problem(50000.0) == "rate (req/s) must be between 1 and 5000; 50000.0 was typed"
    assert rate.problem(NAN) == "rate (req/s) must be a finite number between 1 and 5000; nan was typed"
    assert rate.problem(None) == "rate (req/s) must be a number between 1 and 5000; None was typed"
    assert rate.problem(True) is not None and rate.problem(2500) is None
    count = Limit("trials", 2, 20, whole=True, why="each takes a while")
    assert count.problem(2.5, "trials") == ("trials = 2.5: trials must be a whole number between 2 and 20 "
                                            "(each takes a while)")
    assert count.within(low=4).problem(3) and count.within(low=1).low == 2  # a floor only ever narrows


def test_nonfinite_names_the_first_path_inside_nested_values():
    assert nonfinite({"a": [1.0, {"b": (2.0, NAN)}]}) == "a[1].b[1] = nan"
    assert nonfinite({"a": [1, 2.5, "text", None]}) is None
    with pytest.raises(ValueError, match=r"x\.y = inf"):
        check_finite({"y": INF}, "x")
