"""The one table of load bounds in the load generator itself: LoadSpec, the worker's commands and the CLI refuse a
value outside, nan and infinity, naming the field (no server: all of it is refused before anything is sent)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loadgen import cli
from loadgen.limits import LIMITS, Limit, check_finite, nonfinite
from loadgen.spec import LoadSpec, SequenceSpec, TrafficClass
from loadgen.specfile import spec_from_dict, spec_to_dict
from loadgen.generate_stream import StreamSpec
from loadgen.spec_limits import check_stream, peak_rate

ROOT = Path(__file__).resolve().parents[2]
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
    import dataclasses

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


def test_peak_rates_of_the_arrival_processes():
    spec = spec_from_dict({"arrival": {"kind": "bursty", "on_s": 0.5, "off_s": 1.5}})
    assert peak_rate(spec.arrival, 100.0) == pytest.approx(400.0)  # the mean over a cycle of 0.5 s on, 1.5 s off
    mmpp = spec_from_dict({"arrival": {"kind": "mmpp", "ratio": 10, "high_s": 1, "low_s": 4}}).arrival
    assert peak_rate(mmpp, 140.0) == pytest.approx(500.0)  # low = 140 * 5 / 14 = 50 req/s, high = 10 * low


def test_a_stream_spec_is_held_to_the_same_table():
    check_stream(StreamSpec())
    with pytest.raises(ValueError, match="concurrency = 1000"):
        check_stream(StreamSpec(concurrency=1000))
    with pytest.raises(ValueError, match="timeout_s = inf"):
        check_stream(StreamSpec(timeout_s=INF))


@pytest.mark.parametrize("argv, words", [
    (["--concurrency", "1000", "--duration", "5"], "concurrency = 1000: concurrency must be between 0 and 256"),
    (["--rate", "1e9", "--duration", "5"], "rate = 1000000000.0"),
    (["--rate", "nan", "--duration", "5"], "rate = nan: rate (req/s) must be a finite number"),
    (["--concurrency", "4", "--duration", "inf"], "duration_s = inf"),
    (["--concurrency", "4", "--duration", "1e9"], "duration (s) must be positive and at most 3600"),
    (["--concurrency", "4", "--max-requests", "1000000000000"], "max_requests = 1000000000000"),
    (["--concurrency", "4", "--duration", "5", "--timeout-ms", "nan"], "classes[0].timeout_ms = nan"),
    (["--rate", "1000", "--arrival", "step", "-p", "steps=1:1,1:100", "--duration", "5"], "its peak = 100000.0"),
])
def test_the_cli_refuses_before_sending_anything(argv, words, capsys):
    # Port 9 (discard) has no server: a run that got past the bounds would fail on connecting instead.
    assert cli.main(["run", "--url", "http://127.0.0.1:9", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err, err


def test_the_cli_refuses_a_spec_file_with_an_infinite_count(tmp_path, capsys):
    path = tmp_path / "spec.yaml"
    path.write_text("concurrency: .inf\nduration_s: 5\n")  # an int field: int(inf) overflows before validate
    assert cli.main(["run", "--url", "http://127.0.0.1:9", "--spec", str(path)]) == 2
    assert "error: " in capsys.readouterr().err


def test_the_cli_help_states_the_bounds():
    text = cli.parser()._subparsers._group_actions[0].choices["run"].format_help()  # noqa: SLF001
    assert "concurrency between 0 and 256" in " ".join(text.split())


def test_the_worker_refuses_a_start_outside_the_table_and_keeps_serving():
    """A start command whose spec is outside the table ends at once with the reason; no run starts, and the worker
    still answers the next command (a malformed one here), so it is not wedged."""
    bad = spec_to_dict(LoadSpec(model="gpu_sim"))
    bad["concurrency"] = 1000
    lines = [{"op": "start", "url": "http://127.0.0.1:9", "spec": bad},
             {"op": "start", "url": "http://127.0.0.1:9", "spec": {**spec_to_dict(LoadSpec()), "rate": INF}}]
    text = "".join(json.dumps(c) + "\n" for c in lines)
    done = subprocess.run([sys.executable, "-m", "loadgen", "worker"], input=text, capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [e["ev"] for e in events] == ["ready", "end", "end"], (events, done.stderr[-2000:])
    events = events[1:]
    assert events[0]["error"].startswith("load refused: concurrency = 1000: concurrency must be between 0 and 256")
    assert "rate = inf" in events[1]["error"] and done.returncode == 0, events


def test_the_worker_keeps_a_run_s_load_when_an_update_is_outside_the_table(caplog):
    from loadgen.run import LoadRun  # noqa: PLC0415
    from loadgen.worker import _update_fits  # noqa: PLC0415

    run = LoadRun(LoadSpec(model="gpu_sim"), "http://127.0.0.1:9", [])  # never run: only its spec is read
    assert _update_fits(run, {"op": "update", "concurrency": 200})
    assert not _update_fits(run, {"op": "update", "concurrency": 1000})
    assert not _update_fits(run, {"op": "update", "rate": NAN})
    assert "update refused, the run keeps its load: concurrency = 1000" in caplog.text
