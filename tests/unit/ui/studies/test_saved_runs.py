"""Saved runs on the Experiments page (app/ui/studies/saved_runs.py) on the FakeLab: the current run saved under a
label shown as typed (never Markdown, a formula or a link), two runs side by side, relabelled, deleted; a damaged run
says what cannot be read."""
from __future__ import annotations

from loadgen.spec import LoadSpec
from tests.unit.ui.apptest import button, no_exception, ok, open_page, run_page, texts, widget
from tests.unit.ui.studies import study_samples

TYPED = "**not bold** $5 vs $7 :red[plain] a:b [no link](http://127.0.0.1/)"
TAB = 4  # Saved runs


def save(at, label: str) -> str:
    widget(at.text_input, "Label for the current run").set_value(label)
    ok(button(at, "Save current run").click().run())
    saved = [s for s in texts(at.success) if s.startswith("Saved run ")]
    assert len(saved) == 1, texts(at.success)
    return saved[0]


def test_the_current_run_is_saved_under_a_label_shown_as_typed_and_two_are_compared(on_fake):
    on_fake.start_traffic(LoadSpec(model="gpu_sim", concurrency=2, duration_s=600), ran_s=12)
    at = open_page("lab_pages/experiments.py")
    first = save(at, TYPED)
    assert first.startswith(f"Saved run 1: {TYPED} ("), first  # as typed: every mark of it escaped
    assert not [s for s in at.success if "**not bold**" in s.value], "a label reached Markdown unescaped"
    save(at, "second")
    heading = [h.value for h in at.tabs[TAB].subheader if h.value.startswith("A: ")]
    assert len(heading) == 1 and "$" not in heading[0].replace("\\$", "") and "](" not in heading[0], heading
    assert texts(at.tabs[TAB].subheader)[-1] == f"A: {TYPED}  vs  B: second"
    assert [r.label for r in on_fake.runs()] == ["second", TYPED]

    ok(at.selectbox(key="exp:run_pick").set_value(2).run())  # the run "second"
    ok(at.text_input(key="exp:relabel_text").set_value("renamed").run())
    ok(at.button(key="exp:relabel").click().run())
    assert [r.label for r in on_fake.runs()] == ["renamed", TYPED]
    ok(at.button(key="exp:delete_run").click().run())
    assert [r.label for r in on_fake.runs()] == [TYPED]


def test_with_no_traffic_there_is_nothing_to_save_and_the_page_says_so(on_fake):
    at = open_page("lab_pages/experiments.py")
    no_exception(button(at, "Save current run").click().run())
    assert any("no traffic has run yet" in e for e in texts(at.error)), texts(at.error)


def test_a_damaged_saved_run_says_what_cannot_be_read(on_fake):
    study_samples.damaged_studies(on_fake)
    pane = run_page("lab_pages/experiments.py").tabs[TAB]
    warnings = texts(pane.warning)
    assert any("cannot be read whole" in w and "client is a list" in w for w in warnings), warnings
