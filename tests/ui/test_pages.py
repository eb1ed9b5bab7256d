"""Every page opens against the live server without an exception or an error box."""
from __future__ import annotations

import pytest

import re
import time

from tests.ui.apptest import PAGES, metric, ok, open_page, texts, wait_until


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_opens(ui_env, page):
    at = open_page(page)
    assert at.title, "a page without a title"


@pytest.mark.parametrize("page", [p for p in PAGES if p.stem != "demo"], ids=lambda p: p.stem)
def test_every_operator_page_offers_the_presenters_choice_in_its_sidebar(ui_env, page):
    at = open_page(page)
    boxes = [b for b in at.sidebar.selectbox if b.label == "What /demo shows"]
    assert len(boxes) == 1, [b.label for b in at.sidebar.selectbox]
    assert boxes[0].options[0] == "The lab, with the running study and its verdict", boxes[0].options


def test_entry_script_opens_overview_then_navigates(ui_env):
    at = open_page("streamlit_app.py")
    assert at.title[0].value == "Triton Batching Lab"
    at.switch_page("lab_pages/dynamic_batching.py").run()
    ok(at)
    assert at.title[0].value == "Dynamic batching"


def test_overview_shows_version_and_ready_models(ui_env, triton):
    at = open_page("lab_pages/overview.py")
    assert metric(at, "Triton version") == "2.51.0"
    assert metric(at, "Server") == "ready"
    assert metric(at, "Backend") == "remote"
    models = at.dataframe[0].value
    expected = sorted(p.name for p in triton.repo.iterdir() if (p / "config.pbtxt").exists())
    assert sorted(models["model"]) == expected
    assert set(models["state"]) == {"READY"}


def test_viewer_mode_is_read_only(ui_env, monkeypatch):
    monkeypatch.setenv("TBL_VIEWER", "1")
    at = open_page("lab_pages/dynamic_batching.py")
    labels = [b.label for b in at.button]
    assert not {"Apply", "Undo", "Start traffic", "Stop traffic"} & set(labels), labels
    assert any("Read-only: viewer mode" in i.value for i in at.info)
    overview = open_page("lab_pages/overview.py")
    assert not [b.label for b in overview.button if b.label.startswith("Restart")]
    experiments = open_page("lab_pages/experiments.py")
    assert "Save current run" not in [b.label for b in experiments.button]


def test_beyond_loopback_only_the_operator_token_may_change_things(ui_env, monkeypatch, caplog):
    import app.ui.access as access  # noqa: PLC0415
    from app.access.gate import Request  # noqa: PLC0415
    from app.access.guess_limit import TokenExchange  # noqa: PLC0415

    now = [0.0]
    monkeypatch.setattr(access, "EXCHANGE", TokenExchange(clock=lambda: now[0]))
    monkeypatch.setattr(access, "request", lambda: Request("192.0.2.7", "192.0.2.7:8501", client="192.0.2.9"))
    monkeypatch.setenv("TBL_OPERATOR_TOKEN", "s3cret-of-20-chars!!")
    at = open_page("lab_pages/dynamic_batching.py")
    assert "Apply" not in [b.label for b in at.button]
    assert any("enter the operator token" in i.value for i in at.info)
    token = next(t for t in at.sidebar.text_input if t.label == "Operator token")
    token.set_value("a-wrong-guess").run()
    assert "Apply" not in [b.label for b in at.button]
    assert any("Refused: wrong operator token" in e.value for e in at.sidebar.error), [e.value for e in at.error]
    at.run()  # a later rerun of the page (a click elsewhere) still says it
    assert any("Refused: wrong operator token" in e.value for e in at.sidebar.error), [e.value for e in at.error]
    refusals = [r.getMessage() for r in caplog.records if "refused operator token" in r.getMessage()]
    assert refusals and "from 192.0.2.9" in refusals[-1] and "a-wrong-guess" not in refusals[-1], refusals
    now[0] += 1.5  # past the wait after one wrong token
    token = next(t for t in at.sidebar.text_input if t.label == "Operator token")
    assert token.value == "", "the field keeps the typed token"
    token.set_value("s3cret-of-20-chars!!").run()
    assert "Apply" in [b.label for b in at.button] and "Start traffic" in [b.label for b in at.button]
    assert not [t for t in at.sidebar.text_input if t.label == "Operator token"]  # typed once
    state = at.session_state.to_dict()
    assert state[access.UNLOCKED_KEY] is True and "s3cret-of-20-chars!!" not in state.values(), state
    monkeypatch.delenv("TBL_OPERATOR_TOKEN")
    at = open_page("lab_pages/dynamic_batching.py")
    assert any("read-only for everyone" in i.value for i in at.info)


def test_demo_page_shows_the_operators_live_lab_with_no_control(lab_with_traffic):
    lab = lab_with_traffic
    wait_until(lambda: lab.measure("gpu_sim", time.time() - 5, time.time()).samples() > 10, 30, "answers")
    lab.mark("gpu_sim", "apply", "delay 500→2000 (a change the audience should see)")
    at = open_page("lab_pages/demo.py")
    controls = [*at.button, *at.text_input, *at.number_input, *at.slider, *at.select_slider, *at.selectbox,
                *at.radio, *at.checkbox, *at.toggle, *at.multiselect, *at.text_area]
    assert controls == [], [getattr(c, "label", c) for c in controls]
    # the audience reads the change as a sentence, never a marker number (tests/app/test_demo_words.py has the words)
    latest = [m for m in texts(at.markdown) if m.startswith("**Latest change**")]
    assert latest and "gpu_sim changed" in latest[0] and "#" not in latest[0], texts(at.markdown)
    assert any(re.search(r"[1-9]\d* answers", c) for c in texts(at.caption)), texts(at.caption)
    assert metric(at, "99 % answered within").endswith(" ms"), [(m.label, m.value) for m in at.metric]
    assert any("Running" in i for i in texts(at.info)), texts(at.info)
    operator = open_page("lab_pages/dynamic_batching.py")
    assert any("demo viewer" in c and "connected" in c for c in texts(operator.caption)), texts(operator.caption)


@pytest.fixture
def lab_with_traffic(lab):
    from loadgen.spec import LoadSpec  # noqa: PLC0415

    lab.start_traffic(LoadSpec(model="gpu_sim", concurrency=2, duration_s=60.0))
    yield lab
    lab.stop_traffic()
