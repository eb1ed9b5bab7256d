"""The Experiments page end to end through AppTest: define a sweep, get the operating point, run an A/B."""
from __future__ import annotations

from tests.ui.apptest import ok, open_page, shown, texts, widget

MODEL = "gpu_sim"


def _start(at, label: str):
    at.button(key=[b.key for b in at.button if b.label == label][0]).click().run()
    return ok(at)


def test_a_sweep_defined_on_the_page_lands_its_operating_point_and_an_ab_gives_a_verdict(lab, restore_model):
    restore_model(MODEL)
    at = open_page("pages/experiments.py")
    widget(at.multiselect, "Instance counts").set_value([1, 2])
    widget(at.multiselect, "max_queue_delay (µs)").set_value([0])
    widget(at.checkbox, "Also the config serving now (default)").uncheck()
    widget(at.text_input, "Load levels").set_value("1, 4")
    widget(at.number_input, "p99 budget (ms)").set_value(500.0)
    widget(at.text_input, "Sweep label").set_value("page sweep")
    _start(at, "Start sweep")
    assert any("Sweep started: 2 configurations × 2 loads" in t for t in texts(at.success)), texts(at.success)
    assert not any("No sweeps yet" in t for t in texts(at.info)), texts(at.info)  # starting, or listed: never "none"
    assert lab.jobs.wait(180), "the sweep did not finish"
    assert lab.jobs.state.error is None, lab.jobs.state.error
    ok(at.run())
    best = [t for t in texts(at.success) if "SLA operating point" in t]
    assert best and "at 4 in flight" in best[0], texts(at.success)  # more load never hurt inside a 500 ms budget
    assert any(b.label.startswith("Apply the recommended config") for b in at.button)
    assert any("perf_analyzer" in c.value and "--concurrency-range" in c.value for c in at.code)

    sources = widget(at.selectbox, "Configuration A").options
    widget(at.selectbox, "Configuration A").set_value("serving now")
    widget(at.selectbox, "Configuration B").set_value(next(s for s in sources if "recommended" in s))
    widget(at.number_input, "Trials").set_value(2)
    widget(at.number_input, "Seconds measured per trial").set_value(1.0)
    widget(at.number_input, "Warm-up per trial (s)").set_value(0.5)
    _start(at, "Start comparison")
    assert lab.jobs.wait(180), "the comparison did not finish"
    assert lab.jobs.state.error is None, lab.jobs.state.error
    ok(at.run())
    verdicts = [t for t in texts(at.info) + texts(at.success) if "over 2 trials" in t]
    assert verdicts and verdicts[0].startswith("B ("), texts(at.info) + texts(at.success)
    advice = [shown(m.value) for m in at.markdown if m.value.startswith("**Recommended:**")]
    assert len(advice) == 1 and ("keep A" in advice[0] or "B (" in advice[0]), advice  # what the report says too
    assert any(d.label == "HTML report" for d in at.get("download_button")), "no report to download"


def test_the_sweep_form_offers_only_the_knobs_the_served_config_can_take(lab):
    """gpu_sim batches dynamically: queue delays are offered. stream_acc uses sequence batching (read from the config
    it serves): no queue delay or preferred sizes, not even with a max_batch_size, and the form says why."""
    at = open_page("pages/experiments.py")
    assert widget(at.multiselect, "max_queue_delay (µs)") and any(m.label == "max_batch_size (empty: keep)"
                                                                   for m in at.multiselect)
    assert lab.config.current("stream_acc").HasField("sequence_batching")
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
    at = open_page("pages/sequence_batching.py")
    assert any(h.value == "Try it: guided scenarios" for h in at.subheader)
    at.button(key="scn:stateful:run").click().run()
    ok(at)
    assert lab.jobs.wait(180), "the scenario did not finish"
    assert lab.jobs.state.error is None, lab.jobs.state.error
    ok(at.run())
    assert any(t.startswith("Last run: the claim held") for t in texts(at.success)), texts(at.success) + texts(at.error)
    assert sum("✅" in m.value for m in at.markdown) == 3
