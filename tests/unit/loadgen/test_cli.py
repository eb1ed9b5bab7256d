"""python -m loadgen run, up to the run: flags and spec files build the spec, and what is wrong is refused in words
before anything is sent (port 9 has no server: a run that got past the checks would fail on connecting instead).
Runs against the real server: tests/contract/loadgen/test_cli.py."""
from __future__ import annotations

import re

import pytest

from loadgen import cli
from loadgen.cli import main, parser, spec_from_args
from loadgen.spec import ArrivalKind, InputSpec, Mode, RetryKind
from tests.loadgen_data import CLI_SPEC


def args(*argv):
    return parser().parse_args(["run", "--url", "http://h:1", *argv])


def first_class(*argv):
    return spec_from_args(args(*argv)).classes[0]


def test_flags_build_the_spec(tmp_path):
    spec = spec_from_args(args("--rate", "50", "--arrival", "bursty", "-p", "on_s=0.25", "--duration", "3",
                               "--retry", "backoff", "--timeout-ms", "20", "--shape", "-1", "--lengths", "4:9"))
    assert spec.mode is Mode.OPEN and spec.rate == 50 and spec.arrival.kind is ArrivalKind.BURSTY
    assert spec.arrival.on_s == 0.25 and spec.duration_s == 3
    cls = spec.classes[0]
    assert cls.retry.kind is RetryKind.BACKOFF and cls.timeout_ms == 20 and cls.shape.lengths() == list(range(4, 10))
    steps = spec_from_args(args("--rate", "10", "--arrival", "step", "-p", "steps=1:1,2:0.5"))
    assert steps.arrival.steps == ((1.0, 1.0), (2.0, 0.5))
    path = tmp_path / "s.yaml"
    path.write_text(CLI_SPEC)
    from_file = spec_from_args(args("--spec", str(path), "--concurrency", "5"))
    assert from_file.concurrency == 5 and [c.name for c in from_file.classes] == ["fast", "probe"]


@pytest.mark.parametrize("argv", [["--rate", "5", "-p", "nonsense"], ["--concurrency", "2", "--spec", "/nope.yaml"]])
def test_bad_input_exits_with_a_message(argv, capsys):
    assert main(["run", "--url", "http://127.0.0.1:9", "--duration", "1", *argv]) == 2
    assert capsys.readouterr().err.startswith("error:")


def test_shapes_per_input_optional_inputs_batch_and_strings():
    cls = first_class("--shape", "IMAGE:3,224,224", "--shape", "-1", "--send", "SCALE", "--send", "IMAGE", "-b", "4",
                      "--string-len", "2:30")
    assert cls.inputs == (InputSpec("IMAGE", dims=(3, 224, 224), send=True), InputSpec("SCALE", send=True))
    assert cls.shape.dims == (-1,) and cls.shape.batch == 4 and cls.string_len == (2, 30)
    assert first_class("--string-len", "8").string_len == (8, 8)


def test_input_data_is_the_class_data():
    cls = first_class("--input-data", "inputs.json", "-b", "2")
    assert cls.data == "inputs.json" and cls.shape.batch == 2 and cls.inputs == ()


@pytest.mark.parametrize("argv, message", [
    (["--shape", "16", "--shape", "8"], "--shape without an input name sizes the inputs with a -1: give it once"),
    (["--shape", "IMAGE:3,x"], r"--shape IMAGE: takes whole numbers separated by ',', got '3,x'"),
    (["--string-len", "a:b"], "--string-len takes whole numbers"),
    (["--input-data", "d.json", "--shape", "X:4"], "data .d.json. gives every tensor and its shape"),
])
def test_wrong_flags_say_what_to_type(argv, message, capsys):
    assert main(["run", "--url", "http://127.0.0.1:9", "--duration", "1", *argv]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err


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
