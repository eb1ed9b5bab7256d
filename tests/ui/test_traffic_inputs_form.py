"""The traffic form's Inputs expander, drawn by Streamlit: each served input, shape fields, send boxes, data."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.ui.apptest import ok, widget

THIRD_PARTY = Path(__file__).resolve().parents[1] / "third_party_repository"


def form_page(pbtxt: str, model: str) -> None:
    import streamlit as st  # noqa: PLC0415 - AppTest runs this function's body as the page
    from google.protobuf import text_format  # noqa: PLC0415
    from tritonclient.grpc import model_config_pb2  # noqa: PLC0415

    from app.traffic.form import TrafficForm, problems  # noqa: PLC0415
    from app.ui.traffic.traffic_panel import _form  # noqa: PLC0415

    config = text_format.Parse(pbtxt, model_config_pb2.ModelConfig())
    form = _form(TrafficForm(model=model), "t", config)
    st.session_state["form"] = form
    st.session_state["problems"] = problems(form, config)


def page(model: str) -> AppTest:
    pbtxt = (THIRD_PARTY / model / "config.pbtxt").read_text()
    return ok(AppTest.from_function(form_page, args=(pbtxt, model), default_timeout=30).run())


def sends(at: AppTest) -> list[str]:
    return at.dataframe[0].value["sends"].tolist()


def test_a_minus_one_input_gets_a_shape_field_and_an_optional_one_a_send_box():
    at = page("var_dims")
    assert [e.label for e in at.expander] == ["Inputs"]
    assert sends(at) == ["[1, 1]", "not sent"]
    widget(at.text_input, "Shape of VALUES [-1], without batch").input("16")
    widget(at.checkbox, "Send the optional input SCALE").check()
    ok(at.run())
    form = at.session_state["form"]
    assert (form.shapes, form.send, at.session_state["problems"]) == ((("VALUES", "16"),), ("SCALE",), [])
    assert sends(at) == ["[1, 16]", "[1, 1]"]
    widget(at.text_input, "Shape of VALUES [-1], without batch").input("4,4")
    at.run()
    assert "does not fit input VALUES" in " ".join(at.session_state["problems"])


def test_fixed_inputs_get_no_fields_and_data_replaces_them(tmp_path):
    at = page("two_inputs")
    assert not [w for w in at.text_input if w.label.startswith("Shape of")] and not at.checkbox
    assert sends(at) == ["[4]", "[2]"]
    at = page("var_dims")
    widget(at.text_input, "Input data: a perf_analyzer JSON file or a folder of .npy files (empty: random values)"
           ).input(str(tmp_path))
    ok(at.run())
    assert not [w for w in at.text_input if w.label.startswith("Shape of")]
    assert sends(at) == ["from the data", "from the data"] and at.session_state["form"].data == str(tmp_path)
