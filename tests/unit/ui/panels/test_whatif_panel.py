"""What if (app/ui/panels/whatif_panel.py): the twin's prediction for the knobs as set, beside the live figures, before
Apply; after Apply the prediction is kept with the change and shown beside its measurement (waiting until then)."""
from __future__ import annotations

from app.traffic.form import TrafficForm, build_spec
from app.ui.panels.whatif_panel import whatif_key
from tests.unit.ui.apptest import ok, open_page, texts, widget

PAGE = "lab_pages/dynamic_batching.py"


def panel_tables(at) -> list:
    return [t.value for t in at.table if "figure" in t.value.columns]


def opened(at, key: str = "dynamic"):
    """Open the panel as a user does (it reruns the page) while the knobs are as served."""
    at.session_state[whatif_key(key, False)] = True
    return at.run()


def test_without_traffic_it_says_it_predicts_for_the_traffic_the_lab_sends(on_fake):
    at = opened(open_page(PAGE))
    assert any("start traffic to `gpu_sim`" in t for t in texts(at.caption)), texts(at.caption)
    assert not any("predicted, as served" in df.columns for df in panel_tables(at))


def test_with_traffic_it_predicts_what_serves_and_the_knobs_as_set_beside_the_live_figures(on_fake):
    on_fake.start_traffic(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=150)), ran_s=20)
    at = open_page(PAGE)
    assert not panel_tables(at), "closed until opened or a knob moves: the twin ran"
    at = opened(at)
    (table,) = [t for t in panel_tables(at) if "predicted, as served" in t.columns]
    assert list(table["figure"]) == ["client ok throughput (req/s)", "client p50 (ms)", "client p99 (ms)",
                                     "average batch size (inferences)"], table
    assert "live (last 20 s)" in table.columns and "predicted, these knobs" not in table.columns
    assert all("[" in cell and "–" in cell for cell in table["predicted, as served"]), table  # value [low–high]
    widget(at.select_slider, "max_queue_delay_microseconds").set_value(2000).run()
    (table,) = [t for t in panel_tables(at) if "predicted, as served" in t.columns]
    # what the moved knobs would do comes first, beside its figure: a half-width column shows it without scrolling
    assert list(table.columns)[:2] == ["figure", "predicted, these knobs"], table.columns
    ok(at.button(key="dynamic:apply").click().run())
    # the knobs are as served again, What if closed; the prediction beside its measurement shows where Apply left
    # the user, open by itself while the change is fresh
    assert not [t for t in panel_tables(at) if "predicted, as served" in t.columns]
    (box,) = [e for e in at.expander if e.label.startswith("Predicted before the change, measured after it")]
    assert box.proto.expanded, box.label
    (checks,) = [t for t in panel_tables(at) if "measured (10 s after)" in t.columns]
    assert list(checks["figure"]) == ["client ok throughput (req/s)", "client p99 (ms)"], checks
    assert any(t.endswith("· max_queue_delay_us 500→2000") for t in texts(at.caption)), texts(at.caption)
    assert set(checks["measured (10 s after)"]) == {"waiting…"}, checks  # the change has not shown for 10 s yet
    assert len(on_fake.prediction_checks("gpu_sim")) == 1


def test_a_stateful_model_gets_the_reason_the_twin_gives_none(on_fake):
    # before any traffic: no promise of a prediction once traffic runs (the twin does not model sequence batching)
    at = opened(open_page("lab_pages/sequence_batching.py"), "sequence")
    assert any("No prediction: " in t and "sequence batching" in t for t in texts(at.caption)), texts(at.caption)
    assert not any("start traffic" in t for t in texts(at.caption)), texts(at.caption)
    on_fake.start_traffic(build_spec(TrafficForm(model="stream_acc", sequences=4, sequence_length=10)), ran_s=20)
    at = opened(open_page("lab_pages/sequence_batching.py"), "sequence")
    assert any("No prediction: " in t and "sequence" in t for t in texts(at.caption)), texts(at.caption)


def test_closed_it_runs_no_twin_yet_an_apply_keeps_the_twins_prediction_and_its_measurement(on_fake):
    on_fake.start_traffic(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=150)), ran_s=20)
    at = open_page(PAGE)
    widget(at.select_slider, "max_queue_delay_microseconds").set_value(2000).run()
    assert any("predicted, these knobs" in t.columns for t in panel_tables(at)), "a moved knob opens it"
    at.session_state[whatif_key("dynamic", True)] = False  # the user closes it
    at.run()
    assert not panel_tables(at)
    ok(at.button(key="dynamic:apply").click().run())
    (check,) = on_fake.prediction_checks("gpu_sim")  # predicted at the click, before the change
    assert check.change == "max_queue_delay_us 500→2000" and check.measured is None, check
    assert check.interval("throughput_rps").value > 0, check.predicted


def test_with_two_classes_it_predicts_each_ones_tail_and_refusals_beside_its_live_tail(on_fake):
    on_fake.start_traffic(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=150, mix="interactive + batch")),
                          ran_s=20)
    at = opened(open_page("lab_pages/priority.py"), "priority")
    (table,) = [t.value for t in at.table if "class (priority)" in t.value.columns]
    assert list(table["class (priority)"]) == ["interactive (1)", "batch (2)"], table
    assert {"p99 ms, live (20 s)", "p99 ms, as served"} <= set(table.columns), table.columns
    assert all("[" in cell for cell in table["p99 ms, as served"]), table
    # two levels, the second's queue bounded at one request: the shares rejected show beside the tails
    widget(at.number_input, "priority_levels (0 = off)").set_value(2).run()
    [w for w in at.number_input if w.label == "max_queue_size (0 = ∞)"][-1].set_value(1).run()
    (table,) = [t.value for t in at.table if "class (priority)" in t.value.columns]
    assert {"p99 ms, these knobs", "rejected, these knobs", "rejected, as served"} <= set(table.columns), table


def test_the_live_column_holds_only_the_running_traffics_seconds(on_fake):
    import re

    on_fake.start_traffic(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=150)), ran_s=8)
    at = opened(open_page(PAGE))
    (table,) = [t for t in panel_tables(at) if "predicted, as served" in t.columns]
    (header,) = [c for c in table.columns if c.startswith("live")]
    # a probe's levels, or the traffic before this run, are not the load the twin predicts for
    assert 6 <= int(re.fullmatch(r"live \(last (\d+) s\)", header).group(1)) <= 14, header


def test_where_the_host_is_the_limit_a_row_says_how_busy_the_twin_expects_its_cpus(on_fake, monkeypatch):
    """A host-bound prediction carries the host's CPU utilisation it expects: the table gets a row for it, beside the
    live reading; a prediction without it (the server the limit) adds none."""
    from dataclasses import replace  # noqa: PLC0415

    on_fake.start_traffic(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=150)), ran_s=20)
    at = opened(open_page(PAGE))
    (table,) = [t for t in panel_tables(at) if "predicted, as served" in t.columns]
    assert "CPU utilization (%)" not in list(table["figure"]), table
    real = on_fake.predict
    monkeypatch.setattr(on_fake, "predict", lambda *a, **k: replace(real(*a, **k), host_cpu=0.734))
    at = opened(open_page(PAGE))
    (table,) = [t for t in panel_tables(at) if "predicted, as served" in t.columns]
    (row,) = [r for _, r in table.iterrows() if r["figure"] == "CPU utilization (%)"]
    assert row["predicted, as served"] == "about 73", row
