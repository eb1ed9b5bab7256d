"""Any model's inputs against a real server: random strings into a BYTES input and back out of a BYTES output, -1
dims filled or left at 1, optional inputs sent on request, two unbatched inputs of two types; each run ends with 0
failures and the answers are checked against what was sent."""
from __future__ import annotations

import numpy as np
import pytest

from loadgen.inputs.metadata import fetch_model
from loadgen.inputs.shapes import ShapeSpec
from loadgen.spec import InputSpec, TrafficClass
from tests.contract.loadgen.inputs.served import answers, drive

pytestmark = pytest.mark.xdist_group("third-party-server")  # one worker starts that server (conftest.py)


def test_random_strings_of_varied_lengths_reach_a_bytes_input(url):
    tc = TrafficClass(shape=ShapeSpec(batch=16), string_len=(0, 40))
    drive(url, "text_len", tc)
    (sent, got), = answers(url, "text_len", tc)
    lengths = [len(s) for s in sent["TEXT"].reshape(-1)]
    assert got["LENGTH"].reshape(-1).tolist() == lengths, (got["LENGTH"].reshape(-1).tolist(), lengths)
    assert len(set(lengths)) > 4 and max(lengths) > 16, lengths  # the range was used, not one length


def test_strings_come_back_through_a_bytes_output(url):
    tc = TrafficClass(shape=ShapeSpec("choice", choices=(1, 5), batch=3), string_len=(0, 12))
    drive(url, "text_echo", tc, requests=30)
    pairs = answers(url, "text_echo", tc)
    assert [sent["TEXT"].shape for sent, _ in pairs] == [(3, 1), (3, 5)]
    for sent, got in pairs:
        assert got["ECHO"].dtype == object and got["ECHO"].tolist() == sent["TEXT"].tolist()


def test_a_minus_one_dim_nobody_sized_is_sent_as_one_and_the_optional_input_stays_out(url):
    tc = TrafficClass(shape=ShapeSpec(batch=2))
    drive(url, "var_dims", tc)
    (sent, got), = answers(url, "var_dims", tc)
    assert set(sent) == {"VALUES"} and sent["VALUES"].shape == (2, 1)
    np.testing.assert_allclose(got["TOTAL"].reshape(-1), sent["VALUES"].sum(axis=1), rtol=1e-6)


def test_a_given_length_and_an_optional_input_sent_on_request(url):
    tc = TrafficClass(shape=ShapeSpec(batch=3), inputs=(InputSpec("VALUES", dims=(16,)), InputSpec("SCALE", send=True)))
    drive(url, "var_dims", tc)
    (sent, got), = answers(url, "var_dims", tc)
    assert sent["VALUES"].shape == (3, 16) and sent["SCALE"].shape == (3, 1)
    expected = sent["VALUES"].sum(axis=1) * sent["SCALE"].reshape(-1)
    np.testing.assert_allclose(got["TOTAL"].reshape(-1), expected, rtol=1e-5)


def test_variable_lengths_fill_the_minus_one_dim(url):
    tc = TrafficClass(shape=ShapeSpec("uniform", low=2, high=9))
    drive(url, "var_dims", tc)
    pairs = answers(url, "var_dims", tc)
    assert [sent["VALUES"].shape[1] for sent, _ in pairs] == list(range(2, 10))
    for sent, got in pairs:
        np.testing.assert_allclose(got["TOTAL"].reshape(-1), sent["VALUES"].sum(axis=1), rtol=1e-6)


def test_two_inputs_of_two_types_without_batching(url):
    tc = TrafficClass()
    drive(url, "two_inputs", tc)
    (sent, got), = answers(url, "two_inputs", tc)
    assert sent["A"].shape == (4,) and sent["B"].shape == (2,) and sent["B"].dtype == np.int32
    np.testing.assert_allclose(got["OUT"], sent["A"] * sent["B"].sum(), rtol=1e-6)


def test_optional_inputs_are_read_from_the_served_config(url):
    info = fetch_model(url, "var_dims")
    assert [(t.name, t.datatype, t.dims, t.optional) for t in info.inputs] == [
        ("VALUES", "FP32", (-1,), False), ("SCALE", "FP32", (1,), True)]
