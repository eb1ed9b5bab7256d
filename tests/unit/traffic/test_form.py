"""Traffic forms map onto load specs, inside the one table of load bounds (loadgen.limits) with the form's floors."""
from __future__ import annotations

import bisect
import dataclasses
from dataclasses import replace
from random import Random

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from app.traffic.form import LIMITS as FORM_LIMITS
from app.traffic.form import (TrafficForm, build_spec, class_targets, form_from_spec, input_rows, keep_up_warning,
                             problems)
from loadgen.arrivals import poisson
from loadgen.limits import LIMITS
from loadgen.spec import InputSpec, Mode, RetryKind
from loadgen.spec_limits import arrays_bytes
from tests.third_party import SOURCE

THIRD_PARTY = SOURCE  # tests/third_party_repository: models the lab did not write


def test_one_class_closed_loop():
    spec = build_spec(TrafficForm(model="gpu_sim", concurrency=12))
    assert spec.mode is Mode.CLOSED and spec.concurrency == 12 and spec.model == "gpu_sim"
    assert [c.name for c in spec.classes] == ["default"]


def test_interactive_and_batch_get_priorities_and_shares():
    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=300, arrival="bursty", mix="interactive + batch",
                                  interactive_share=0.25, retry="backoff"))
    inter, batch = spec.classes
    assert (inter.priority, batch.priority) == (1, 2)
    assert (inter.share, batch.share) == (0.25, 0.75)
    assert inter.retry.kind is RetryKind.BACKOFF and spec.arrival.kind == "bursty" and spec.rate == 300


def test_sequences_replace_classes():
    spec = build_spec(TrafficForm(model="stream_acc", sequences=6, sequence_length=12))
    assert spec.classes == () and spec.sequences[0].count == 6 and spec.sequences[0].model == "stream_acc"


def test_a_typed_value_outside_its_range_is_refused_by_name():
    form = TrafficForm(model="gpu_sim", mode="open", rate=50000.0)
    assert problems(form) == ["rate (req/s) must be between 1 and 5000; 50000.0 was typed"]
    with pytest.raises(ValueError, match="rate"):
        build_spec(form)
    assert problems(TrafficForm(model="gpu_sim", concurrency=0))[0].startswith("concurrency must be between 1")


@pytest.mark.parametrize("form", [
    TrafficForm(model="gpu_sim", concurrency=24, timeout_ms=800.0, sla_ms=40.0, duration_s=60.0),
    TrafficForm(model="gpu_sim", mode="open", rate=450.0, arrival="mmpp", mix="interactive + batch",
                interactive_share=0.2, retry="backoff"),
    TrafficForm(model="stream_acc", sequences=5, sequence_length=7, duration_s=30.0),
])
def test_the_panel_redraws_a_running_spec_as_the_form_that_started_it(form):
    assert form_from_spec(build_spec(form), TrafficForm(model="other")) == form


def test_targets_split_the_shared_rate_by_share():
    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=400, mix="interactive + batch",
                                  interactive_share=0.25))
    assert class_targets(spec) == {"interactive": 100.0, "batch": 300.0}
    assert set(class_targets(build_spec(TrafficForm(model="gpu_sim"))).values()) == {None}  # closed loop


def test_a_generator_that_falls_behind_its_schedule_is_named():
    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=5000))
    slow = {"all": {"seconds": 10, "requests": 10_000, "late": 9_500, "behind": 9_000}}
    assert "not keeping up: 90% of requests went out more than 10 ms after their slot over the last 10 s" in (
        keep_up_warning(spec, slow) or "")
    assert keep_up_warning(spec, {"all": {"seconds": 10, "requests": 49_800, "behind": 100}}) is None  # 0.2 %
    assert keep_up_warning(spec, {"all": {"seconds": 10, "requests": 49_800, "behind": 5_000}})  # 10 %
    jitter = {"all": {"seconds": 10, "requests": 3_600, "late": 440, "behind": 0}}  # 12 % a few ms late: a busy CPU
    assert keep_up_warning(spec, jitter) is None
    assert keep_up_warning(spec, {"all": {"seconds": 2, "requests": 10, "behind": 9}}) is None  # too short to judge
    assert keep_up_warning(spec, {"all": {"seconds": 10, "requests": 10, "behind": 5}}) is None  # too few to judge
    assert keep_up_warning(build_spec(TrafficForm(model="gpu_sim")), slow) is None  # closed loop sends when ready


def test_fewer_sends_than_the_mean_rate_on_time_is_not_a_generator_falling_behind():
    """A Poisson stream sends under 95 % of its mean in many 10 s windows, and an overloaded server leaves the
    last seconds' sends unanswered (not yet counted): neither is the generator's fault when nothing went late."""
    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=20))
    gaps, t, sends = poisson(20.0, Random(7)), 0.0, []
    while t < 2_000:
        t += next(gaps)
        sends.append(t)
    counts = [bisect.bisect(sends, w + 10) - bisect.bisect(sends, w) for w in range(0, 1_990, 10)]
    short = [c for c in counts if c < 0.95 * 20 * 10]
    assert len(short) > 0.1 * len(counts), f"the test's premise: {len(short)} of {len(counts)} windows short"
    warned = [c for c in short if keep_up_warning(spec, {"all": {"seconds": 10, "requests": c, "behind": 0}})]
    assert not warned, f"{len(warned)} on-time windows called the generator slow, e.g. {warned[:5]} of 200 sent"
    overloaded = {"all": {"seconds": 10, "requests": 1_200, "late": 30, "behind": 6}}  # 2,000 asked
    assert keep_up_warning(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=200)), overloaded) is None


def served(model: str) -> model_config_pb2.ModelConfig:
    """The third-party model's config as written (what the tests' server serves for these, defaults aside)."""
    return text_format.Parse((THIRD_PARTY / model / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())


def test_the_inputs_expander_lists_each_served_input_and_the_shape_it_sends():
    rows = input_rows(TrafficForm(model="var_dims"), served("var_dims"))
    assert rows == [
        {"input": "VALUES", "datatype": "FP32", "dims": "[-1]", "optional": "", "sends": "[1, 1]"},
        {"input": "SCALE", "datatype": "FP32", "dims": "[1]", "optional": "yes", "sends": "not sent"},
    ]
    chosen = TrafficForm(model="var_dims", shapes=(("VALUES", "16"),), send=("SCALE",))
    assert [r["sends"] for r in input_rows(chosen, served("var_dims"))] == ["[1, 16]", "[1, 1]"]
    assert [r["sends"] for r in input_rows(TrafficForm(model="two_inputs"), served("two_inputs"))] == ["[4]", "[2]"]
    assert input_rows(TrafficForm(model="text_len"), served("text_len"))[0]["datatype"] == "BYTES"


def test_shapes_sends_and_data_become_the_classes_inputs_and_come_back(tmp_path):
    form = TrafficForm(model="var_dims", mix="interactive + batch", shapes=(("VALUES", "3,4"),), send=("SCALE",))
    spec = build_spec(form)
    assert {c.inputs for c in spec.classes} == {(InputSpec("VALUES", dims=(3, 4)), InputSpec("SCALE", send=True))}
    assert form_from_spec(spec, TrafficForm(model="other")) == form
    data = TrafficForm(model="var_dims", data=str(tmp_path))
    assert form_from_spec(build_spec(data), TrafficForm(model="other")) == data
    typed = TrafficForm(model="var_dims", shapes=(("VALUES", " [16] "),))
    assert build_spec(typed, served("var_dims")).classes[0].inputs == (InputSpec("VALUES", dims=(16,)),)


@pytest.mark.parametrize("form, message", [
    (TrafficForm(model="var_dims", shapes=(("VALUES", "sixteen"),)),
     "the shape of VALUES must be whole numbers separated by commas (e.g. 16 or 3,224,224); 'sixteen' was typed"),
    (TrafficForm(model="var_dims", shapes=(("VALUES", "4,4"),)),
     "inputs.VALUES.dims [4, 4] does not fit input VALUES, served as [-1]: give 1 dim"),
    (TrafficForm(model="var_dims", send=("SCAL",)), "model var_dims has no input SCAL; its inputs are VALUES, SCALE"),
    (TrafficForm(model="var_dims", data="/no/such/data.json"),
     "input data /no/such/data.json is not there: give a perf_analyzer JSON file or a folder of .npy files"),
])
def test_input_mistakes_are_refused_before_the_traffic_starts(form, message):
    assert message in " ".join(problems(form, served("var_dims")))
    with pytest.raises(ValueError):
        build_spec(form, served("var_dims"))


def test_the_data_is_read_and_checked_when_the_traffic_starts(tmp_path):
    path = tmp_path / "data.json"
    path.write_text('{"data": [{"SCALE": [2]}]}')
    form = TrafficForm(model="var_dims", data=str(path))
    assert problems(form, served("var_dims")) == []  # cheap checks only while the form is drawn
    with pytest.raises(ValueError, match="entry 0: required input VALUES is missing"):
        build_spec(form, served("var_dims"))
    both = replace(form, shapes=(("VALUES", "16"),))
    assert "gives every tensor and its shape; drop inputs" in problems(both, served("var_dims"))[0]


# --- the bounds: the table's (loadgen.limits), the form's floors, bytes per request -------------------------------
NAN, INF = float("nan"), float("inf")


# --- the traffic form reads the table -----------------------------------------------------------------------------
def test_the_form_s_bounds_are_the_table_s_with_the_form_s_floors():
    for name in ("concurrency", "rate", "duration_s", "timeout_ms", "sla_ms", "sequences", "sequence_length"):
        form, table = FORM_LIMITS[name], LIMITS[name]
        assert form.high == table.high and form.low >= table.low, (name, form, table)


@pytest.mark.parametrize("change, words", [
    ({"concurrency": 1000}, "concurrency must be between 1 and 256; 1000 was typed"),
    ({"mode": "open", "rate": 1e9}, "rate (req/s) must be between 1 and 5000; 1000000000.0 was typed"),
    ({"mode": "open", "rate": NAN}, "rate (req/s) must be a finite number between 1 and 5000; nan was typed"),
    ({"duration_s": INF}, "stop after (s) must be a finite number between 5 and 3600; inf was typed"),
    ({"sla_ms": NAN}, "SLA (ms) must be a finite number between 1 and 30000; nan was typed"),
])
def test_the_form_refuses_the_extremes_by_name(change, words):
    form = dataclasses.replace(TrafficForm(model="m"), **change)
    assert words in problems(form), problems(form)
    with pytest.raises(ValueError, match=words.split(" must")[0].replace("(", r"\(").replace(")", r"\)")):
        build_spec(form)


BIG = """name: "big"
backend: "python"
input { name: "X" data_type: TYPE_FP32 dims: [-1] }
input { name: "S" data_type: TYPE_STRING dims: [2] }
output { name: "Y" data_type: TYPE_FP32 dims: [-1] }
"""


def test_the_form_refuses_a_request_over_64_mib_from_the_served_inputs():
    config = text_format.Parse(BIG, model_config_pb2.ModelConfig())
    fine = TrafficForm(model="big", shapes=(("X", "1000"),))
    assert problems(fine, config) == []
    huge = TrafficForm(model="big", shapes=(("X", "20000000"),))  # 20 M FP32 values: 80,000,000 bytes + 2 strings
    wrong = problems(huge, config)
    assert wrong == ["model big: one request's inputs are 80,000,040 bytes; bytes of one request's inputs must be at "
                     "most 67,108,864 (64 MiB): send fewer rows or shorter lengths"], wrong


def test_request_bytes_count_values_and_strings_as_sent():
    arrays = [np.zeros(10, np.float32), np.array([b"ab", b"c"], dtype=object)]
    assert arrays_bytes(arrays) == 40 + (4 + 2) + (4 + 1)
