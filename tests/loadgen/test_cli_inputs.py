"""python -m loadgen run: the flags that say what each request carries (shapes per input, optional inputs, data)."""
from __future__ import annotations

import re

import pytest

from loadgen.cli import main, parser, spec_from_args
from loadgen.spec import InputSpec


def first_class(*argv):
    return spec_from_args(parser().parse_args(["run", "--url", "http://h:1", *argv])).classes[0]


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
