"""Stored autopilot runs on the Experiments page (app/ui/studies/autopilot_runs.py): a damaged one says it cannot be
shown and can be deleted (a whole one and its replay: tests/unit/ui/panels/test_autopilot_panel.py)."""
from __future__ import annotations

from tests.unit.ui.apptest import labels, no_exception, run_page, texts
from tests.unit.ui.studies import study_samples

TAB = 3  # Autopilot runs


def test_a_damaged_autopilot_run_says_so_and_can_be_deleted(on_fake):
    damaged = study_samples.damaged_studies(on_fake)
    at = run_page("lab_pages/experiments.py")
    pilot = at.tabs[TAB]
    assert any("This autopilot run could not be shown" in e for e in texts(pilot.error)), texts(pilot.error)
    assert "Delete this autopilot run" in labels(pilot.button)
    no_exception(at.button(key=f"exp:autopilot_delete:{damaged['pilot_wrong']}").click().run())
    assert damaged["pilot_wrong"] not in {s.id for s in on_fake.studies()}
