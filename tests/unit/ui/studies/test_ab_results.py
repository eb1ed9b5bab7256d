"""Stored A/B comparisons on the Experiments page (app/ui/studies/ab_results.py) from the FakeLab's store: the verdict
in the report's order (caution, each finding, the recommendation) and its report; a damaged comparison says what is
wrong and can be deleted."""
from __future__ import annotations

from tests.unit.experiments import samples
from tests.unit.ui.apptest import no_exception, open_page, run_page, shown, texts
from tests.unit.ui.studies import study_samples

PAGE = "lab_pages/experiments.py"
AB_TAB = 2


def ordered(at) -> list[tuple[str, str]]:
    """Return (kind, text) of every alert and Markdown block of the page, in the order the page draws them."""
    kinds = ("success", "info", "warning", "error", "markdown")
    return [(node.type, shown(node.value)) for node in at.main if getattr(node, "type", None) in kinds]


def test_an_ab_verdict_shows_the_caution_then_each_finding_then_the_recommendation(on_fake):
    result = samples.ab_result(names=("start", "2 instances"), late={("2 instances", 2): 0.2})
    study_samples.store_ab(on_fake, result, "made-up comparison")
    at = open_page(PAGE)  # the newest comparison is drawn
    drawn = ordered(at)
    caution = next(i for i, (k, t) in enumerate(drawn) if k == "warning" and t.startswith("Caution: The load gen"))
    b = "B (instances 1 → 2, delay 500 → 2000 µs)"
    opening = next(i for i, (k, t) in enumerate(drawn) if t == f"{b} is better than A over 4 trials.")
    assert drawn[opening][0] == "success", drawn[opening]  # a headline figure differs clearly
    bullets = drawn[opening + 1]
    assert bullets[0] == "markdown" and bullets[1].startswith("- B's goodput within SLA is "), bullets
    advice = next(i for i, (k, t) in enumerate(drawn) if t.startswith("**Recommended"))
    assert drawn[advice][1].startswith(f"**Recommended, once the caution above is dealt with:** {b} — clearly")
    assert caution < opening < advice, drawn
    assert any(t == f"##### {b} against A" for _, t in drawn), drawn
    columns = list(at.tabs[AB_TAB].dataframe[0].value.columns)  # the A/B tab's first table
    assert columns[:4] == ["class", "metric", "A mean", "B mean"], columns
    assert {"HTML report", "CSV of every window"} <= {d.label for d in at.tabs[AB_TAB].get("download_button")}


def test_a_damaged_comparison_says_what_is_wrong_and_can_be_deleted(on_fake):
    damaged = study_samples.damaged_studies(on_fake)
    at = run_page(PAGE)  # the newest comparison, its plan damaged
    ab = at.tabs[AB_TAB]
    assert any(f"Comparison {damaged['ab_wrong_shape']} cannot be read" in e for e in texts(ab.error)), texts(ab.error)
    no_exception(at.selectbox(key="exp:ab_pick").set_value(damaged["ab_whole"]).run())
    warnings = texts(at.tabs[AB_TAB].warning)
    assert any("trial 'A#1'" in w and "'p99_ms' is 'fast'" in w for w in warnings), warnings
    assert any(d.label == "HTML report" for d in at.tabs[AB_TAB].get("download_button"))
    no_exception(at.selectbox(key="exp:ab_pick").set_value(damaged["ab_wrong_shape"]).run())
    no_exception(at.button(key="exp:del_ab").click().run())
    assert damaged["ab_wrong_shape"] not in {s.id for s in on_fake.studies()}
