"""The concept pages on a repository the lab did not write, served by a Triton started by hand (issue 24): every
model in the picker with its state, no page proposes a change nobody made, an ensemble's steps are reachable."""
from __future__ import annotations

import pytest

from tests.server.hand_started import explicit_server  # noqa: F401 - fixture
from tests.third_party import MODELS
from tests.ui.apptest import ok, open_page, texts, widget
from tests.ui.conftest import lab_environ

SERVED = sorted(set(MODELS) - {"onnx_plain"})


@pytest.fixture(scope="module")
def third_party_ui(explicit_server, tmp_path_factory):  # noqa: F811 - the fixture imported above
    """Point the dashboard's one Lab at the hand-started server for this module; put the session's back after."""
    env = {"TRITON_URL": explicit_server.endpoint.http_url, "TRITON_GRPC_URL": explicit_server.endpoint.grpc_url,
           "TRITON_METRICS_URL": explicit_server.endpoint.metrics_url,
           "TRITON_MODEL_REPOSITORY": str(explicit_server.repo),
           "TBL_STATE_DIR": str(tmp_path_factory.mktemp("third-party-ui-state"))}
    with lab_environ(env):
        yield explicit_server


def on_model(page: str, model: str):
    at = open_page(page)
    widget(at.selectbox, "Model").set_value(model).run()
    return ok(at)


@pytest.mark.parametrize("page", ["lab_pages/instances.py", "lab_pages/dynamic_batching.py"])
def test_opening_a_page_proposes_nothing_on_any_model(third_party_ui, page):
    for model in SERVED:
        at = on_model(page, model)
        diff = [e.label for e in at.expander if e.label.startswith("Config diff")]
        assert diff == ["Config diff (no change)"], f"{model} on {page}: {diff}"
        assert widget(at.button, "Apply").disabled, f"{model} on {page}: Apply offered with nothing changed"


def test_the_picker_lists_a_model_that_did_not_load_with_triton_s_reason(third_party_ui):
    at = open_page("lab_pages/instances.py")
    picker = widget(at.selectbox, "Model")
    assert sorted(picker.options) == sorted(f"{m} — UNAVAILABLE" if m == "onnx_plain" else m for m in MODELS)
    picker.set_value("onnx_plain").run()
    warning = " ".join(texts(at.warning))
    assert "onnx_plain` is UNAVAILABLE" in warning and "onnxruntime" in warning, warning


def test_a_model_without_batch_dimension_says_what_enabling_it_changes(third_party_ui):
    at = on_model("lab_pages/dynamic_batching.py", "two_inputs")
    assert "no batch dimension" in " ".join(texts(at.caption))
    widget(at.select_slider, "max_batch_size").set_value(4).run()
    assert any("changes the model's contract" in w for w in texts(at.warning))


def test_an_ensemble_shows_its_steps_and_each_can_be_tuned(third_party_ui):
    at = on_model("lab_pages/instances.py", "pipeline")
    info = " ".join(texts(at.info))
    assert "is an **ensemble**" in info and "`pipe_scale` → `pipe_offset`" in info, info
    table = next(t.value for t in at.dataframe if "role" in t.value.columns)
    assert list(table["model"]) == ["pipeline", "pipe_scale", "pipe_offset"]
    widget(at.button, "Tune pipe_offset").click().run()
    ok(at)
    assert widget(at.selectbox, "Model").value == "pipe_offset"


def test_a_scenario_on_a_repository_without_the_lab_s_models_says_so_before_run(third_party_ui):
    at = open_page("lab_pages/instances.py")
    info = " ".join(texts(at.info))
    assert "which this server does not serve" in info and "Run on the lab's models" in info, info
    labels = [b.label for b in at.button]
    assert "Run on the lab's models" in labels and "Run" not in labels, labels
