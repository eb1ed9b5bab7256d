"""The Experiments page through AppTest: a sweep defined on the page lands its operating point and an A/B of a
configuration defined from knobs gives a verdict (live); made-up stored studies (tests/ui/study_samples.py) show the
recommendation in the colour its certainty deserves, the points' repeats, the A/B verdict in the report's order."""
from __future__ import annotations

import re

import pytest

from app.config.read import settings_of
from tests.experiments import samples
from tests.ui import study_samples
from tests.ui.apptest import ok, open_page, shown, texts, widget

MODEL = "gpu_sim"


def _start(at, label: str):
    at.button(key=[b.key for b in at.button if b.label == label][0]).click().run()
    return ok(at)


def _delay_now(lab) -> int:
    return settings_of(lab.served_config(MODEL)).dynamic_batching.max_queue_delay_microseconds


def ordered(at) -> list[tuple[str, str]]:
    """Return (kind, text) of every alert and Markdown block of the page, in the order the page draws them."""
    kinds = ("success", "info", "warning", "error", "markdown")
    return [(node.type, shown(node.value)) for node in at.main if getattr(node, "type", None) in kinds]


def test_a_sweep_defined_on_the_page_lands_its_operating_point_and_an_ab_gives_a_verdict(lab, restore_model):
    """The A/B needs no sweep: B is the serving config with a 5 ms queue delay, set on the spot."""
    restore_model(MODEL)
    at = open_page("lab_pages/experiments.py")
    assert widget(at.selectbox, "Configuration A").value == "serving now"
    assert widget(at.selectbox, "Configuration B").value == "set knobs over the serving config"
    delay = _delay_now(lab)
    at.number_input(key=f"exp:ab_knob1:{MODEL}:delay").set_value(5000).run()
    ok(at)
    assert f"**B:** delay {delay} → 5000 µs" in [shown(m.value) for m in at.markdown], [m.value for m in at.markdown]
    widget(at.number_input, "Trials").set_value(2)
    widget(at.number_input, "Seconds measured per trial").set_value(1.0)
    widget(at.number_input, "Warm-up per trial (s)").set_value(0.5)
    _start(at, "Start comparison")
    assert lab.wait_job(180), "the comparison did not finish"
    assert lab.job().error is None, lab.job().error
    ok(at.run())
    verdicts = [t for t in texts(at.info) + texts(at.success) if "over 2 trials" in t]
    assert verdicts and verdicts[0].startswith(f"B (delay {delay} → 5000 µs)"), texts(at.info) + texts(at.success)
    advice = [shown(m.value) for m in at.markdown if m.value.startswith("**Recommended")]
    assert len(advice) == 1 and ("keep A" in advice[0] or "B (" in advice[0]), advice  # what the report says too
    assert any(d.label == "HTML report" for d in at.get("download_button")), "no report to download"

    widget(at.multiselect, "Instance counts").set_value([1, 2])
    widget(at.multiselect, "max_queue_delay (µs)").set_value([0])
    widget(at.checkbox, "Also the config serving now (default)").uncheck()
    widget(at.text_input, "Load levels").set_value("1, 4")
    widget(at.number_input, "p99 budget (ms)").set_value(500.0)
    widget(at.number_input, "Re-measure the top candidates (0–10)").set_value(2)
    widget(at.text_input, "Sweep label").set_value("page sweep")
    _start(at, "Start sweep")
    assert any("Sweep started: 2 configurations × 2 loads" in t and "up to 2 candidates measured 1× more" in t
               for t in texts(at.success)), texts(at.success)
    assert not any("No sweeps yet" in t for t in texts(at.info)), texts(at.info)  # starting, or listed: never "none"
    assert lab.wait_job(180), "the sweep did not finish"
    assert lab.job().error is None, lab.job().error
    ok(at.run())
    best = [t for t in texts(at.success) + texts(at.warning) if "SLA operating point" in t]
    assert best and "at 4 in flight" in best[0], texts(at.success)  # more load never hurt inside a 500 ms budget
    assert "measured 2×" in best[0] or "measured 3×" in best[0], best  # re-measured before it was named
    assert any(b.label.startswith("Apply ") for b in at.button)
    assert any("perf_analyzer" in c.value and "--concurrency-range" in c.value for c in at.code)
    assert any("(recommended)" in s for s in widget(at.selectbox, "Configuration B").options)


def test_an_ab_on_the_page_can_play_a_trace_per_trial_and_is_judged_on_it(lab, restore_model):
    restore_model(MODEL)
    at = open_page("lab_pages/experiments.py")
    at.number_input(key=f"exp:ab_knob1:{MODEL}:delay").set_value(5000).run()
    ok(at)
    widget(at.radio, "Traffic").set_value("trace")
    widget(at.selectbox, "Trace (traffic: a rate trace)").set_value("flash_crowd")
    widget(at.number_input, "Trace compress (recorded s per played s)").set_value(900.0)  # the hour in 4 s
    widget(at.number_input, "Trace scale (rate multiplier)").set_value(0.5)  # 34-220 req/s: light on a shared machine
    widget(at.number_input, "Trials").set_value(2)
    _start(at, "Start comparison")
    started = [t for t in texts(at.success) if t.startswith("Comparison started")]
    assert started and "each playing flash_crowd once" in started[0], texts(at.success) + texts(at.error)
    assert lab.wait_job(180), "the comparison did not finish"
    assert lab.job().error is None, lab.job().error
    ok(at.run())
    advice = [shown(m.value) for m in at.markdown if m.value.startswith("**Recommended")]
    assert len(advice) == 1 and "judged on the trace" in advice[0], advice


@pytest.fixture
def stored(lab):
    """Made-up sweeps (best two within the spread, and clearly apart) and a comparison, removed afterwards."""
    store = lab
    space = study_samples.sweep_space()
    ids = {}
    for name, capacity in (("apart", study_samples.APART), ("close", study_samples.CLOSE)):
        points = study_samples.sweep_points(space, capacity)
        repeats = study_samples.repeat_best(space, points, lower={"i1-d0": 0.3})  # 1 instance, delay 0: disagrees
        ids[name] = study_samples.store_sweep(store, space, points, repeats, f"made-up sweep, {name}")
    result = samples.ab_result(names=("start", "2 instances"), late={("2 instances", 2): 0.2})
    ids["ab"] = study_samples.store_ab(store, result, "made-up comparison")
    yield ids
    for sid in ids.values():
        store.delete_study(sid)


def test_a_recommendation_within_the_spread_is_a_warning_offering_the_runner_up_and_an_ab_of_both(lab, stored):
    at = open_page("lab_pages/experiments.py")
    at.selectbox(key="exp:sweep_pick").set_value(stored["close"]).run()
    ok(at)
    said = [t for t in texts(at.warning) if "SLA operating point" in t]
    assert len(said) == 1 and "2 instances, delay 2000 µs at 8 in flight" in said[0], texts(at.warning)
    assert "measured 2×" in said[0] and "within the spread — 2 instances, delay 0 µs is as good" in said[0], said
    assert not [t for t in texts(at.success) if "SLA operating point" in t]
    table = at.tabs[0].dataframe[0].value  # the sweep tab's point table
    row = table[(table["configuration"] == "2 instances, delay 2000 µs") & (table["load"] == 8)].iloc[0]
    assert row["measured"] == 2 and row["marked"] == ""
    marked = table[table["marked"] != ""]
    assert list(marked["configuration"]) == ["1 instance, delay 0 µs"] and "disagree" in marked["marked"].iloc[0]
    assert set(table["measured"]) == {1, 2}
    labels = [b.label for b in at.button]
    assert "Apply 2 instances, delay 2000 µs — not confirmed: within the spread" in labels, labels
    assert "Apply the runner-up (2 instances, delay 0 µs) instead" in labels, labels
    compare = "Compare 2 instances, delay 2000 µs and 2 instances, delay 0 µs in an A/B"
    at.button(key=next(b.key for b in at.button if b.label == compare)).click().run()
    ok(at)
    sid = stored["close"]
    assert at.selectbox(key="exp:ab_model").value == MODEL
    assert widget(at.selectbox, "Configuration A").value == f"sweep {sid}: 2 instances, delay 2000 µs (recommended)"
    assert widget(at.selectbox, "Configuration B").value == f"sweep {sid}: 2 instances, delay 0 µs (runner-up)"
    assert widget(at.selectbox, "Configuration C").value == "—"
    names = [shown(m.value) for m in at.markdown if m.value.startswith(("**A:**", "**B:**"))]
    assert len(names) == 2 and all(f"sweep {sid}: " in n for n in names), names
    assert any("A/B comparison tab's form now holds both" in t for t in texts(at.info)), texts(at.info)


def test_a_clear_recommendation_is_green_and_its_apply_button_says_recommended(lab, stored):
    at = open_page("lab_pages/experiments.py")
    at.selectbox(key="exp:sweep_pick").set_value(stored["apart"]).run()
    ok(at)
    said = [t for t in texts(at.success) if "SLA operating point" in t]
    assert len(said) == 1 and said[0].endswith(": clear."), texts(at.success) + texts(at.warning)
    labels = [b.label for b in at.button]
    assert "Apply the recommended config (2 instances, delay 2000 µs)" in labels, labels
    assert not [x for x in labels if "runner-up" in x or x.startswith("Compare ")], labels


def test_an_ab_verdict_shows_the_caution_then_each_finding_then_the_recommendation(lab, stored):
    at = open_page("lab_pages/experiments.py")
    at.selectbox(key="exp:ab_pick").set_value(stored["ab"]).run()
    ok(at)
    shown_ = ordered(at)
    caution = next(i for i, (k, t) in enumerate(shown_) if k == "warning" and t.startswith("Caution: The load gen"))
    b = "B (instances 1 → 2, delay 500 → 2000 µs)"
    opening = next(i for i, (k, t) in enumerate(shown_) if t == f"{b} is better than A over 4 trials.")
    assert shown_[opening][0] == "success", shown_[opening]  # a headline figure differs clearly
    bullets = shown_[opening + 1]
    assert bullets[0] == "markdown" and bullets[1].startswith("- B's goodput within SLA is "), bullets
    advice = next(i for i, (k, t) in enumerate(shown_) if t.startswith("**Recommended"))
    assert shown_[advice][1].startswith(f"**Recommended, once the caution above is dealt with:** {b} — clearly")
    assert caution < opening < advice, shown_
    assert any(t == f"##### {b} against A" for _, t in shown_), shown_
    columns = list(at.tabs[2].dataframe[0].value.columns)  # the A/B tab's first table
    assert columns[:4] == ["class", "metric", "A mean", "B mean"], columns


def test_each_configuration_is_named_and_diffed_before_the_run_and_a_bad_one_says_why(lab):
    at = open_page("lab_pages/experiments.py")
    delay = _delay_now(lab)
    serving = f"1 instance, max batch 32, delay {delay} µs, preferred [4, 8] (serving)"
    names = [shown(m.value) for m in at.markdown if m.value.startswith(("**A:**", "**B:**"))]
    assert names == [f"**A:** {serving}", f"**B:** {serving}"], names  # B's knobs start at the serving values
    key = f"exp:ab_knob1:{MODEL}:"
    at.number_input(key=key + "instances").set_value(2).run()
    at.number_input(key=key + "delay").set_value(5000).run()
    ok(at)
    names = [shown(m.value) for m in at.markdown if m.value.startswith(("**A:**", "**B:**"))]
    assert names == [f"**A:** {serving}", f"**B:** instances 1 → 2, delay {delay} → 5000 µs"], names
    codes = [c.value for c in at.code]
    assert "the same config as serving" in codes, codes  # A's diff
    diff = next(c for c in codes if c.startswith("--- serving"))
    assert re.search(r"^\+\s*max_queue_delay_microseconds: 5000$", diff, re.M), diff
    assert re.search(r"^\+\s*count: 2$", diff, re.M), diff
    at.text_input(key=key + "preferred").set_value("64").run()  # above gpu_sim's max_batch_size 32
    assert texts(at.error) == ["preferred sizes [64] are above max_batch_size 32: lower them or set "
                               "max_batch_size=64"], texts(at.error)
    assert not at.exception
    assert next(b for b in at.button if b.label == "Start comparison").disabled
    at.text_input(key=key + "preferred").set_value("").run()
    at.selectbox(key="exp:ab_arm2").set_value("paste a config.pbtxt").run()
    at.text_area(key=f"exp:ab_paste2:{MODEL}").set_value('name: "another_model"\nmax_batch_size: 8\n').run()
    assert len(at.error) == 1 and "is for model 'another_model', not 'gpu_sim'" in texts(at.error)[0], texts(at.error)
    assert not at.exception


def test_the_sweep_form_offers_only_the_knobs_the_served_config_can_take(lab):
    """gpu_sim batches dynamically: queue delays are offered. stream_acc uses sequence batching (read from the config
    it serves): no queue delay or preferred sizes, not even with a max_batch_size, and the form says why."""
    at = open_page("lab_pages/experiments.py")
    assert widget(at.multiselect, "max_queue_delay (µs)") and any(m.label == "max_batch_size (empty: keep)"
                                                                   for m in at.multiselect)
    assert lab.served_config("stream_acc").HasField("sequence_batching")
    at.selectbox(key="exp:sweep_model").set_value("stream_acc").run()
    ok(at)
    at.multiselect(key="exp:sweep_sizes:stream_acc").set_value([4, 8]).run()
    ok(at)
    labels = [m.label for m in at.multiselect] + [t.label for t in at.text_input]
    assert "max_queue_delay (µs)" not in labels, labels
    assert not any(x.startswith("Preferred batch sizes") for x in labels), labels
    assert "Instance counts" in labels and "max_batch_size (empty: keep)" in labels, labels
    assert any("No queue delays or preferred batch sizes for stream_acc" in c and "sequence batching" in c
               for c in texts(at.caption)), texts(at.caption)


def test_a_concept_page_runs_its_scenario_and_shows_the_verdict(lab, restore_model):
    restore_model("stream_acc")
    at = open_page("lab_pages/sequence_batching.py")
    assert any(h.value == "Try it: guided scenarios" for h in at.subheader)
    at.button(key="scn:stateful:run").click().run()
    ok(at)
    assert lab.wait_job(180), "the scenario did not finish"
    assert lab.job().error is None, lab.job().error
    ok(at.run())
    assert any(t.startswith("Last run: the claim held") for t in texts(at.success)), texts(at.success) + texts(at.error)
    assert sum(":material/check_circle: held" in m.value for m in at.markdown) == 3  # one per check (no ✅: Debian)
