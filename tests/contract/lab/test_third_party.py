"""A repository of models the lab did not write: listed with their states, driven with 0 failures, tuned with
no phantom diff and comments kept, refused with a reason where Triton would refuse (issue 24)."""
from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import tritonclient.http as http

from app.config.edits import set_settings
from app.config.errors import ConfigError, ConfigRejectedError, ConfigValidationError
from app.config.model_config import parse_config
from app.config.read import settings_of
from app.config.settings import DynamicBatching, InstanceGroup
from app.server.repository import model_names
from loadgen.spec import InputSpec, LoadSpec, TrafficClass
from tests.helpers import wait_until
from tests.third_party import MODELS, embedded_lab_on_a_copy

LICENCE = "# Copyright 2026 Example Corp. All rights reserved."
SERVED = sorted(set(MODELS) - {"onnx_plain"})  # onnx_plain needs the onnxruntime backend the CPU wheel lacks


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A lab whose embedded server serves a copy of the third-party repository (its state in a temp folder)."""
    with embedded_lab_on_a_copy(tmp_path_factory.mktemp("third-party")) as lab:
        yield lab


def file_of(lab, model: str) -> str:
    return (lab.server_facts().repository / model / "config.pbtxt").read_text()


def moved(lab, model: str, **changes):
    """Return the served config of model with some settings changed (what a page's knobs hand to Apply)."""
    current = lab.served_config(model)
    return set_settings(current, replace(settings_of(current), **changes))


def drive(lab, spec: LoadSpec, timeout_s: float = 60.0) -> dict:
    """Run spec through the dashboard's generator (worker process) to its bound; return its totals per class."""
    lab.start_traffic(spec)
    wait_until(lambda: not lab.traffic().running, timeout_s, "the run to end")
    snap = lab.traffic_snapshot(window_s=0)
    assert snap.error is None, snap.error
    return snap.summary


def test_every_model_is_listed_with_its_state_and_triton_s_reason(lab):
    assert model_names(lab.server_facts().repository) == sorted(MODELS), "folders without config.pbtxt must count as models"
    states = {m.name: m for m in lab.status().models}
    assert sorted(states) == sorted(MODELS)
    assert all(states[m].state == "READY" for m in SERVED), {m: states[m].state for m in SERVED}
    onnx = states["onnx_plain"]
    assert onnx.state == "UNAVAILABLE" and "onnxruntime" in onnx.reason, onnx
    assert states["versioned"].version == "2"


def test_opening_a_page_proposes_nothing_for_any_model(lab):
    for model in SERVED:
        current = lab.served_config(model)
        same = set_settings(current, settings_of(current))
        assert same == current, f"{model}: settings round trip changed the config"
        plan = lab.plan(model, same)
        assert plan.diff == "", f"{model}: phantom diff\n{plan.diff}"


def test_served_values_are_the_base(lab):
    auto = settings_of(lab.served_config("py_auto"))  # no config.pbtxt: auto_complete_config decides
    assert auto.max_batch_size == 8 and auto.dynamic_batching is not None
    assert auto.instance_groups and auto.instance_groups[0].count == 1
    plain = settings_of(lab.served_config("text_len"))  # the file says nothing about instances: Triton serves 1
    assert plain.instance_groups[0].count == 1


@pytest.mark.parametrize("model,spec", [
    ("text_len", TrafficClass(string_len=(0, 40))),
    ("var_dims", TrafficClass(inputs=(InputSpec("VALUES", dims=(12,)), InputSpec("SCALE", send=True)))),
    ("two_inputs", TrafficClass()),
    ("py_auto", TrafficClass()),
    ("pipeline", TrafficClass()),
    ("versioned", TrafficClass()),
    ("fanout", TrafficClass()),
])
def test_each_model_is_driven_with_no_failure(lab, model, spec):
    totals = drive(lab, LoadSpec(model=model, concurrency=2, duration_s=None, max_requests=40,
                                 classes=(replace(spec, name="default"),)))
    row = totals["all"]
    assert row["requests"] >= 40 and row["failed"] == 0 and row["ok"] >= 40, row


def test_a_string_model_answers_right(lab):
    client = http.InferenceServerClient(lab.server_facts().endpoint.host_port)
    text = np.array([[b"hello"], [b"a longer string"]], dtype=np.object_)
    item = http.InferInput("TEXT", list(text.shape), "BYTES")
    item.set_data_from_numpy(text)
    got = client.infer("text_len", [item]).as_numpy("LENGTH")
    assert got.reshape(-1).tolist() == [5, 15]


def test_an_apply_edits_only_the_changed_field_and_keeps_the_licence(lab):
    before = file_of(lab, "text_len")
    result = lab.apply("text_len", moved(lab, "text_len", instance_groups=(InstanceGroup(count=2),)),
                       "instances 1→2")
    after = file_of(lab, "text_len")
    assert after.startswith(LICENCE) and "# One string per row." in after
    assert parse_config(after).instance_group[0].count == 2
    changed = [line for line in result.diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == ["+instance_group {", "+  count: 2", "+}"], result.diff  # the file said nothing about it
    assert settings_of(lab.served_config("text_len")).instance_groups[0].count == 2
    assert before.splitlines()[:6] == after.splitlines()[:6]
    lab.undo("text_len")
    assert file_of(lab, "text_len") == before, "undo did not bring the user's text back byte for byte"


def test_a_model_without_config_pbtxt_gets_a_complete_one_then_undo_removes_it(lab):
    path = lab.server_facts().repository / "py_auto" / "config.pbtxt"
    assert not path.exists()
    current = settings_of(lab.served_config("py_auto"))
    dyn = replace(current.dynamic_batching, max_queue_delay_microseconds=2000)
    result = lab.apply("py_auto", moved(lab, "py_auto", dynamic_batching=dyn), "delay → 2000")
    assert result.new_file and path.is_file() and "wrote a complete config.pbtxt" in result.message
    written = parse_config(path.read_text())
    assert written.dynamic_batching.max_queue_delay_microseconds == 2000 and written.max_batch_size == 8
    assert written.input[0].name == "INPUT", "the complete config carries what Triton auto-completed"
    undone = lab.undo("py_auto")
    assert undone.removed_file and not path.exists()
    assert lab.served_config("py_auto").dynamic_batching.max_queue_delay_microseconds == 0


def test_an_ensemble_step_change_that_breaks_the_ensemble_is_refused(lab):
    before = file_of(lab, "pipe_offset")
    with pytest.raises(ConfigValidationError, match="ensemble 'pipeline'"):
        lab.apply("pipe_offset", moved(lab, "pipe_offset", max_batch_size=4), "max_batch_size 8→4")
    assert file_of(lab, "pipe_offset") == before
    assert lab.serves(["pipeline", "pipe_offset"])


def test_an_ensemble_step_is_tuned_and_the_ensemble_keeps_serving(lab):
    dyn = DynamicBatching(max_queue_delay_microseconds=500)
    lab.apply("pipe_offset", moved(lab, "pipe_offset", dynamic_batching=dyn), "dynamic batching on")
    assert file_of(lab, "pipe_offset").startswith(LICENCE)
    client = http.InferenceServerClient(lab.server_facts().endpoint.host_port)
    raw = http.InferInput("RAW", [1, 8], "FP32")
    raw.set_data_from_numpy(np.ones((1, 8), np.float32))
    assert client.infer("pipeline", [raw]).as_numpy("RESULT").reshape(-1).tolist() == [4.0] * 8
    lab.undo("pipe_offset")


def test_the_twin_says_an_ensemble_queues_at_its_steps_rather_than_predict_it_as_one_model(lab):
    """Read from the real server's config (platform "ensemble"): the twin, which models one model's queue, refuses
    with the steps named — before it would have predicted the ensemble as one model with its steps in series."""
    with pytest.raises(ValueError, match="pipeline is an ensemble: each request runs pipe_scale → pipe_offset"):
        lab.predict("pipeline", settings_of(lab.served_config("pipeline")))


def test_batching_asked_of_a_model_without_a_batch_dimension_is_refused_clearly(lab):
    before = file_of(lab, "two_inputs")
    with pytest.raises(ConfigValidationError, match="needs max_batch_size > 0"):
        lab.apply("two_inputs", moved(lab, "two_inputs", dynamic_batching=DynamicBatching()), "dynamic on")
    assert file_of(lab, "two_inputs") == before


def test_a_config_triton_refuses_keeps_the_old_one_serving(lab):
    """py_auto's auto_complete_config raises when the config asks for a larger max_batch_size than it allows."""
    with pytest.raises(ConfigRejectedError) as caught:
        lab.apply("py_auto", moved(lab, "py_auto", max_batch_size=16), "max_batch_size 8→16")
    assert "max_batch_size" in str(caught.value) and "keeps serving the old one" in str(caught.value)
    assert not (lab.server_facts().repository / "py_auto" / "config.pbtxt").exists()
    assert settings_of(lab.served_config("py_auto")).max_batch_size == 8


def test_an_out_of_range_enum_is_a_config_error(lab):
    text = file_of(lab, "two_inputs").replace("TYPE_INT32", "999")
    with pytest.raises(ConfigError, match="data_type"):
        lab.apply_text("two_inputs", text, "a typo", confirm_contract=True)


def test_a_contract_change_rebuilds_the_running_traffic(lab):
    """two_inputs gains a batch dimension while traffic runs: the traffic follows it instead of failing."""
    before = file_of(lab, "two_inputs")
    lab.start_traffic(LoadSpec(model="two_inputs", concurrency=2, duration_s=60.0))
    try:
        wait_until(lambda: (lab.traffic_snapshot(window_s=0).summary.get("all") or {}).get("ok", 0) > 20, 30, "answers")
        lab.apply("two_inputs", moved(lab, "two_inputs", max_batch_size=4), "max_batch_size 0→4",
                  confirm_contract=True)
        rebuilt = lab.markers("two_inputs")[-1]
        assert "rebuilt for the new contract" in rebuilt.text, [m.text for m in lab.markers("two_inputs")]
        t0 = time.time()
        wait_until(lambda: (lab.traffic_window(t0, time.time()).get("all") or {}).get("ok", 0) > 20,
                   30, "answers under the new contract")
        row = lab.traffic_window(t0, time.time())["all"]
        assert row["failed"] == 0, row.get("error_texts")
    finally:
        lab.stop_traffic()
        lab.undo("two_inputs")
    assert file_of(lab, "two_inputs") == before


def test_a_five_apply_session_names_only_real_changes_and_undo_brings_the_file_back(lab):
    from app.config.knobs import summarize_change  # noqa: PLC0415

    before = file_of(lab, "text_len")
    steps = [
        ("instance_groups", lambda s: (InstanceGroup(count=2),), "count"),
        ("dynamic_batching", lambda s: replace(s.dynamic_batching, max_queue_delay_microseconds=500),
         "max_queue_delay_microseconds"),
        ("dynamic_batching", lambda s: replace(s.dynamic_batching, preferred_batch_sizes=(4, 8)),
         "preferred_batch_size"),
        ("max_batch_size", lambda s: 8, "max_batch_size"),
        ("instance_groups", lambda s: (InstanceGroup(count=3),), "count"),
    ]
    for field, value, written in steps:
        old = settings_of(lab.served_config("text_len"))
        new = replace(old, **{field: value(old)})
        result = lab.apply("text_len", set_settings(lab.served_config("text_len"), new),
                           summarize_change(old, new))
        lines = [line for line in result.diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
        pairs = {sign: Counter(pair for line in lines if line[0] == sign
                               for pair in re.findall(r"([a-z_]+)\s*:\s*([^\s{}\[\],]+)", line)) for sign in "+-"}
        moved = {name for name, _ in (pairs["+"] - pairs["-"]) + (pairs["-"] - pairs["+"])}
        assert moved == {written}, result.diff  # the one field that changed, whatever line it shares
        assert file_of(lab, "text_len").startswith(LICENCE) and "# One string per row." in file_of(lab, "text_len")
        mark = lab.markers("text_len")[-1].text
        assert mark.count("→") == 1 and "→" in mark, mark  # one real change named, nothing invented
    assert len(before.splitlines()) + 5 >= len(file_of(lab, "text_len").splitlines())
    for _ in steps:
        lab.undo("text_len")
    assert file_of(lab, "text_len") == before


def test_a_scenario_says_it_needs_the_lab_s_models_and_runs_on_them_beside_the_user_s(lab):
    from app.scenarios.claims import SCENARIOS  # noqa: PLC0415
    from app.scenarios.runner import run_scenario, start_scenario  # noqa: PLC0415

    scenario = SCENARIOS["stateful"]
    ready = {m.name for m in lab.status().models if m.state == "READY"}
    assert scenario.missing(ready) == ["stream_acc"]
    with pytest.raises(ValueError, match="needs the lab's own model stream_acc, which this server does not serve"):
        run_scenario(lab, scenario)
    beside = lab.lab_models()
    assert beside is not lab and beside.server_facts().endpoint != lab.server_facts().endpoint and beside.serves(scenario.needs())
    assert lab.lab_models() is beside, "a second call must not start a third server"
    start_scenario(lab, "stateful", on=beside)
    assert lab.wait_job(180), "the scenario did not end"
    result = lab.job().result
    assert lab.job().error is None and result is not None and result.status == "done", lab.job()
    stored = lab.study(result.study_id)  # the user's lab shows the verdict: one store
    assert stored.status == "done" and stored.result["passed"] == result.passed
    assert sorted(m.name for m in lab.status().models) == sorted(MODELS), "the user's server was touched"
