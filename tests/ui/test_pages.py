"""Every page opens against the live server without an exception or an error box."""
from __future__ import annotations

import pytest

from tests.ui.apptest import PAGES, metric, ok, open_page


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_opens(ui_env, page):
    at = open_page(page)
    assert at.title, "a page without a title"


def test_entry_script_opens_overview_then_navigates(ui_env):
    at = open_page("streamlit_app.py")
    assert at.title[0].value == "Triton Batching Lab"
    at.switch_page("pages/dynamic_batching.py").run()
    ok(at)
    assert at.title[0].value == "Dynamic batching"


def test_overview_shows_version_and_ready_models(ui_env, triton):
    at = open_page("pages/overview.py")
    assert metric(at, "Triton version") == "2.51.0"
    assert metric(at, "Server") == "ready"
    assert metric(at, "Mode") == "remote"
    models = at.dataframe[0].value
    expected = sorted(p.name for p in triton.repo.iterdir() if (p / "config.pbtxt").exists())
    assert sorted(models["model"]) == expected
    assert set(models["state"]) == {"READY"}


def test_viewer_mode_hides_config_changes_but_keeps_traffic(ui_env, monkeypatch):
    monkeypatch.setenv("TBL_VIEWER", "1")
    at = open_page("pages/dynamic_batching.py")
    labels = [b.label for b in at.button]
    assert "Apply" not in labels and "Undo" not in labels
    assert "Start traffic" in labels
    assert any("Viewer mode" in i.value for i in at.info)
    overview = open_page("pages/overview.py")
    assert "Restart embedded server" not in [b.label for b in overview.button]
