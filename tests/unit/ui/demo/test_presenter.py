"""The presenter's choice (app/ui/demo/presenter.py): what every /demo viewer follows — checked, shared by every
operator's session, set from the panel in an operator page's sidebar."""
from __future__ import annotations

import pytest

from app.ui.demo import presenter
from tests.unit.ui.apptest import ok, open_page, widget


def test_the_presenters_choice_is_checked_and_shared():
    choice = presenter.PresenterChoice(clock=lambda: 5.0)
    assert choice.get().kind == presenter.AUTO
    with pytest.raises(ValueError, match="study_id"):
        choice.set(presenter.STUDY)
    with pytest.raises(ValueError, match="kind must be one of"):
        choice.set("slides")
    assert choice.set(presenter.REPORT, 7) == presenter.OnScreen(presenter.REPORT, 7, 5.0)
    assert choice.set(presenter.LIVE, 7) == presenter.OnScreen(presenter.LIVE, None, 5.0)  # the lab: no study


def test_the_panel_sets_what_every_demo_viewer_follows(on_fake, choice):
    at = open_page("lab_pages/overview.py")
    box = widget(at.sidebar.selectbox, "What /demo shows")
    assert box.value == 0 and box.options[:2] == ["The lab, with the running study and its verdict",
                                                  "The live lab only"], box.options
    ok(box.set_value(1).run())  # the live lab only
    assert presenter.current().kind == presenter.LIVE
    again = open_page("lab_pages/dynamic_batching.py")  # another operator's session
    assert widget(again.sidebar.selectbox, "What /demo shows").value == 1
