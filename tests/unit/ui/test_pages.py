"""Every page script (lab_pages/*.py) and the entry script's navigation, drawn by AppTest on the FakeLab: each opens
with no exception or error box, for an operator and for a viewer, with the server down, and with a model that did not
load."""
from __future__ import annotations

import pytest

from loadgen.spec import LoadSpec
from tests.unit.ui.apptest import PAGES, controls, labels, metric, ok, open_page, run_page, texts

OPERATOR_PAGES = [p for p in PAGES if p.stem != "demo"]
CONCEPT_PAGES = ["dynamic_batching", "instances", "priority", "sequence_batching", "diagnosis"]


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_every_page_opens_with_traffic_running_and_offers_the_presenters_choice(on_fake, page):
    on_fake.start_traffic(LoadSpec(model="gpu_sim", concurrency=2, duration_s=600), ran_s=12)  # charts with data
    at = open_page(page)
    assert at.title, "a page without a title"
    boxes = [b for b in at.sidebar.selectbox if b.label == "What /demo shows"]
    if page.stem == "demo":  # /demo follows the choice; it offers none
        assert boxes == [] and controls(at) == [], labels(controls(at))
        return
    assert len(boxes) == 1, labels(at.sidebar.selectbox)
    assert boxes[0].options[0] == "The lab, with the running study and its verdict", boxes[0].options


def test_the_entry_script_opens_overview_then_navigates(on_fake):
    at = open_page("streamlit_app.py")
    assert at.title[0].value == "Triton Batching Lab"
    ok(at.switch_page("lab_pages/dynamic_batching.py").run())
    assert at.title[0].value == "Dynamic batching"


def test_overview_shows_the_server_and_every_model(on_fake):
    at = open_page("lab_pages/overview.py")
    assert (metric(at, "Triton version"), metric(at, "Server"), metric(at, "Backend")) == ("2.51.0", "ready", "remote")
    models = at.dataframe[0].value
    assert sorted(models["model"]) == sorted(on_fake.states) and set(models["state"]) == {"READY"}
    assert any("No traffic has run yet" in c for c in texts(at.caption)), texts(at.caption)


def test_viewer_mode_is_read_only_on_every_page(on_fake, monkeypatch):
    monkeypatch.setenv("TBL_VIEWER", "1")
    acting = {"Apply", "Undo", "Start traffic", "Stop traffic", "Update live", "Run", "Start sweep",
              "Start comparison", "Save current run", "Turn the autopilot on"}
    for page in OPERATOR_PAGES:
        at = open_page(page)
        shown = set(labels(at.button))
        assert not acting & shown and not [b for b in shown if b.startswith("Restart")], (page.stem, shown)
        assert not [b for b in at.sidebar.selectbox if b.label == "What /demo shows"], page.stem
        if page.stem in CONCEPT_PAGES:
            assert any("Read-only: viewer mode" in i for i in texts(at.info)), (page.stem, texts(at.info))


@pytest.mark.parametrize("page", ["overview", "dynamic_batching", "experiments", "demo"])
def test_a_server_that_does_not_answer_is_said_and_breaks_no_page(on_fake, page):
    on_fake.set_down()
    at = run_page(f"lab_pages/{page}.py")
    shown = texts(at.warning) + texts(at.error)
    assert any("Server not answering" in w or "the fake lab's server is down" in w for w in shown), shown
    if page == "overview":
        assert metric(at, "Server") == "down"


def test_a_model_that_did_not_load_is_listed_first_with_its_reason(on_fake):
    reason = "failed to load 'mlp': unexpected shape for input 'INPUT__0'"
    on_fake.set_state("mlp", "UNAVAILABLE", reason)
    overview = open_page("lab_pages/overview.py")
    table = overview.dataframe[0].value
    assert (table.iloc[0]["model"], table.iloc[0]["state"]) == ("mlp", "UNAVAILABLE"), table
    assert any(w.startswith("`mlp` (version 1) is UNAVAILABLE: ") and reason in w for w in texts(overview.warning))
    at = open_page("lab_pages/dynamic_batching.py")
    picker = at.selectbox(key="dynamic:model")
    assert "mlp — UNAVAILABLE" in picker.options and "gpu_sim" in picker.options, picker.options
    ok(picker.set_value("mlp").run())
    warning = " ".join(texts(at.warning))
    assert "`mlp` is UNAVAILABLE: " in warning and reason in warning, warning


def test_the_three_batchings_checks_each_model_and_follows_the_one_picked(on_fake):
    at = open_page("lab_pages/three_batchings.py")
    table = at.dataframe[0].value.set_index("model")
    assert table.loc["stream_acc", "scheduler"] == "sequence" and set(table["fits"]) == {"yes"}, table
    ok(at.selectbox(key="three:model").set_value("stream_acc").run())


def test_no_pages_folder_beside_the_entry_script():
    """Streamlit's old multipage mode starts whenever a folder named pages/ exists beside the entry script: a first
    session opening a deep link would then leave file names in every later session's sidebar (tests/smoke)."""
    from app.paths import ROOT  # noqa: PLC0415

    assert not (ROOT / "pages").exists(), sorted(p.name for p in (ROOT / "pages").iterdir())
