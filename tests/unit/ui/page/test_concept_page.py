"""The concept pages on a repository the lab did not write (tests/third_party_repository on a FakeLab): every model in
the picker with its state, no page proposes a change nobody made, a model without a batch dimension says what
enabling one changes, an ensemble's steps are reachable, and the guided scenarios say they need the lab's models."""
from __future__ import annotations

from tests.third_party import MODELS
from tests.unit.ui.apptest import labels, ok, open_page, texts, widget

UNAVAILABLE = "onnx_plain"  # no config.pbtxt and no Python model: the fake server has no backend to complete it


def on_model(page: str, model: str):
    at = open_page(page)
    ok(widget(at.selectbox, "Model").set_value(model).run())
    return at


def test_opening_a_page_proposes_nothing_on_its_models(on_third_party):
    """Every knob set on every model: tests/unit/ui/configure/test_knob_widgets.py; here the pages themselves."""
    for page, model in (("lab_pages/instances.py", "var_dims"), ("lab_pages/dynamic_batching.py", "py_auto")):
        at = on_model(page, model)  # a group without a count; a config Triton completed
        diff = [e.label for e in at.expander if e.label.startswith("Config diff")]
        assert diff == ["Config diff (no change)"], f"{model} on {page}: {diff}"
        assert widget(at.button, "Apply").disabled, f"{model} on {page}: Apply offered with nothing changed"


def test_the_picker_lists_a_model_that_did_not_load_with_its_reason(on_third_party):
    at = open_page("lab_pages/instances.py")
    picker = widget(at.selectbox, "Model")
    assert sorted(picker.options) == sorted(f"{m} — UNAVAILABLE" if m == UNAVAILABLE else m for m in MODELS)
    picker.set_value(UNAVAILABLE).run()
    warning = " ".join(texts(at.warning))
    assert f"{UNAVAILABLE}` is UNAVAILABLE: " in warning and "no backend" in warning, warning


def test_a_model_without_batch_dimension_says_what_enabling_it_changes(on_third_party):
    at = on_model("lab_pages/dynamic_batching.py", "two_inputs")
    assert "no batch dimension" in " ".join(texts(at.caption))
    widget(at.select_slider, "max_batch_size").set_value(4).run()
    assert any("changes the model's contract" in w for w in texts(at.warning)), texts(at.warning)


def test_an_ensemble_shows_its_steps_and_each_can_be_tuned(on_third_party):
    at = on_model("lab_pages/instances.py", "pipeline")
    info = " ".join(texts(at.info))
    assert "is an **ensemble**" in info and "`pipe_scale` → `pipe_offset`" in info, info
    table = next(t.value for t in at.dataframe if "role" in t.value.columns)
    assert list(table["model"]) == ["pipeline", "pipe_scale", "pipe_offset"]
    ok(widget(at.button, "Tune pipe_offset").click().run())
    assert widget(at.selectbox, "Model").value == "pipe_offset"


def test_an_ensemble_offers_no_knobs_no_prediction_and_no_autopilot_and_says_why(on_third_party):
    """An ensemble has no instances, batcher or queue of its own (Triton refuses an instance_group on one): its page
    offers no knob that could only be refused, no twin's prediction for one, no autopilot; its steps' pages do."""
    count = "Instances (instance_group.count)"
    at = on_model("lab_pages/instances.py", "pipeline")
    said = " ".join(texts(at.caption))
    assert "No knobs here: pipeline is an ensemble: each request runs pipe_scale → pipe_offset" in said, said
    assert "Off — the autopilot steers a model's instances and queue delay; pipeline is an ensemble" in said, said
    assert count not in labels(at.slider), labels(at.slider)
    assert not any(e.label.startswith("What if") for e in at.expander), [e.label for e in at.expander]
    assert not any("turn on the autopilot" in e.label for e in at.expander), [e.label for e in at.expander]
    assert "Edit config.pbtxt" in [e.label for e in at.expander], [e.label for e in at.expander]  # the file is
    ok(widget(at.button, "Tune pipe_scale").click().run())  # a step: every knob, the twin and the autopilot
    assert count in labels(at.slider), labels(at.slider)
    assert any(e.label.startswith("What if") for e in at.expander), [e.label for e in at.expander]
    assert any("turn on the autopilot" in e.label for e in at.expander), [e.label for e in at.expander]


def test_a_scenario_on_a_repository_without_the_labs_models_says_so_before_run(on_third_party):
    at = open_page("lab_pages/instances.py")
    info = " ".join(texts(at.info))
    assert "which this server does not serve" in info and "Run on the lab's models" in info, info
    assert "Run on the lab's models" in labels(at.button) and "Run" not in labels(at.button), labels(at.button)
