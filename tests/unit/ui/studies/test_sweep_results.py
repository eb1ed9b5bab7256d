"""Stored sweeps on the Experiments page (app/ui/studies/sweep_results.py) from the FakeLab's store: the operating point
in the colour its certainty deserves, its repeats, the runner-up and an A/B of both offered when it is not clear,
Apply acting on the lab — and sweeps damaged in SQLite, failed or refused, each saying what is wrong."""
from __future__ import annotations

from app.config.read import settings_of
from app.store.database import FAILED
from tests.unit.ui.apptest import button, labels, no_exception, ok, open_page, run_page, texts, widget
from tests.unit.ui.studies import study_samples
from tests.unit.ui.studies.study_samples import REFUSED

PAGE = "lab_pages/experiments.py"
TABS = ["Sweep", "Judged on a trace", "A/B comparison", "Autopilot runs", "Saved runs"]


def tab(at, name: str):
    return at.tabs[TABS.index(name)]


def stored_sweep(lab, capacity: dict[str, float], label: str) -> int:
    """Store a made-up sweep of gpu_sim (1 or 2 instances × delay 0 or 2000 µs) with its repeats; return its id."""
    space = study_samples.sweep_space()
    points = study_samples.sweep_points(space, capacity)
    repeats = study_samples.repeat_best(space, points, lower={"i1-d0": 0.3})  # 1 instance, delay 0: disagrees
    return study_samples.store_sweep(lab, space, points, repeats, label)


def test_a_recommendation_within_the_spread_is_a_warning_offering_the_runner_up_and_an_ab_of_both(on_fake):
    sid = stored_sweep(on_fake, study_samples.CLOSE, "made-up sweep, the best two within the spread")
    at = open_page(PAGE)  # the newest sweep is drawn
    said = [t for t in texts(at.warning) if "SLA operating point" in t]
    assert len(said) == 1 and "2 instances, delay 2000 µs at 8 in flight" in said[0], texts(at.warning)
    assert "measured 2×" in said[0] and "within the spread — 2 instances, delay 0 µs is as good" in said[0], said
    assert not [t for t in texts(at.success) if "SLA operating point" in t]
    table = tab(at, "Sweep").dataframe[0].value  # the point table
    row = table[(table["configuration"] == "2 instances, delay 2000 µs") & (table["load"] == 8)].iloc[0]
    assert row["measured"] == 2 and row["marked"] == ""
    marked = table[table["marked"] != ""]
    assert list(marked["configuration"]) == ["1 instance, delay 0 µs"] and "disagree" in marked["marked"].iloc[0]
    assert set(table["measured"]) == {1, 2}
    assert "Apply 2 instances, delay 2000 µs — not confirmed: within the spread" in labels(at.button)
    assert "Apply the runner-up (2 instances, delay 0 µs) instead" in labels(at.button)
    ok(button(at, "Compare 2 instances, delay 2000 µs and 2 instances, delay 0 µs in an A/B").click().run())
    assert at.selectbox(key="exp:ab_model").value == "gpu_sim"
    assert widget(at.selectbox, "Configuration A").value == f"sweep {sid}: 2 instances, delay 2000 µs (recommended)"
    assert widget(at.selectbox, "Configuration B").value == f"sweep {sid}: 2 instances, delay 0 µs (runner-up)"
    assert widget(at.selectbox, "Configuration C").value == "—"
    assert any("A/B comparison tab's form now holds both" in t for t in texts(at.info)), texts(at.info)


def test_a_clear_recommendation_is_green_and_its_apply_serves_it(on_fake):
    sid = stored_sweep(on_fake, study_samples.APART, "made-up sweep, the best clearly ahead")
    at = open_page(PAGE)
    said = [t for t in texts(at.success) if "SLA operating point" in t]
    assert len(said) == 1 and said[0].endswith(": clear."), texts(at.success) + texts(at.warning)
    assert not [x for x in labels(at.button) if "runner-up" in x or x.startswith("Compare ")], labels(at.button)
    assert any("perf_analyzer" in c.value and "--concurrency-range" in c.value for c in at.code)
    ok(button(at, "Apply the recommended config (2 instances, delay 2000 µs)").click().run())
    served = settings_of(on_fake.served_config("gpu_sim"))
    assert (served.instance_groups[0].count, served.dynamic_batching.max_queue_delay_microseconds) == (2, 2000)
    assert any("reloaded gpu_sim" in s for s in texts(at.success)), texts(at.success)
    assert on_fake.last_change("gpu_sim").text.startswith(f"sweep {sid}: recommended")


def test_each_damaged_sweep_says_what_is_wrong_every_tab_still_draws_and_delete_removes_it(on_fake):
    damaged = study_samples.damaged_studies(on_fake)
    at = run_page(PAGE)
    assert labels(at.tabs) == TABS
    listed = [t for t in texts(tab(at, "Sweep").caption) if t.startswith("Stored sweeps that cannot be read whole")]
    assert listed and all(str(damaged[n]) in listed[0] for n in ("bad_json", "null_number", "wrong_shape")), listed
    for name, words in {"bad_json": "definition is not valid JSON", "null_number": "p99_budget_ms is null",
                        "wrong_shape": "no space mapping (found list [1, 2])"}.items():
        no_exception(at.selectbox(key="exp:sweep_pick").set_value(damaged[name]).run())
        errors = texts(tab(at, "Sweep").error)
        assert any(f"Sweep {damaged[name]} cannot be read" in e and words in e for e in errors), (name, errors)
        assert "Delete this sweep" in labels(tab(at, "Sweep").button), name
    no_exception(at.selectbox(key="exp:sweep_pick").set_value(damaged["missing_point"]).run())
    warnings = texts(tab(at, "Sweep").warning)
    assert any("named the point 'i2@4' as the operating point" in w and "'i1@4'" in w for w in warnings), warnings
    named = texts(tab(at, "Sweep").success) + warnings  # measured once, so not confirmed: still named
    assert any("SLA operating point: 1 instance at 1 in flight" in s for s in named), named
    no_exception(at.selectbox(key="exp:sweep_pick").set_value(damaged["bad_json"]).run())
    no_exception(at.button(key="exp:del_sweep").click().run())
    assert damaged["bad_json"] not in {s.id for s in on_fake.studies()}
    assert on_fake.runs(study_id=damaged["bad_json"]) == [] and labels(at.tabs) == TABS


def test_a_failed_sweep_is_red_with_the_servers_reason_and_a_refused_configuration_is_a_failed_point(on_fake):
    damaged = study_samples.damaged_studies(on_fake)
    at = run_page(PAGE)
    no_exception(at.selectbox(key="exp:sweep_pick").set_value(damaged["failed"]).run())
    sweep = tab(at, "Sweep")
    assert any(f"Sweep {damaged['failed']}: **failed**" in e and REFUSED in e for e in texts(sweep.error))
    assert not any(f"Sweep {damaged['failed']}" in s for s in texts(sweep.success))
    assert not any("No sweeps yet" in i for i in texts(sweep.info)), texts(sweep.info)
    no_exception(at.selectbox(key="exp:sweep_pick").set_value(damaged["whole"]).run())
    sweep = tab(at, "Sweep")
    assert any(f"Sweep {damaged['whole']}: **done**" in s for s in texts(sweep.success)), texts(sweep.success)
    assert any("could not be applied" in w and f"2 instances: {REFUSED}" in w for w in texts(sweep.warning))
    table = sweep.dataframe[0].value
    refused = table[table["status"] == FAILED]
    assert list(refused["configuration"]) == ["2 instances"] and REFUSED in refused["note"].iloc[0], table


def test_a_twin_ranked_sweep_shows_what_the_twin_predicted_beside_what_was_measured(on_fake):
    from app.experiments.sweep.sweeper import measured_operating_point

    sid = stored_sweep(on_fake, study_samples.CLOSE, "made-up sweep, ranked by the twin")
    space = study_samples.sweep_space()
    points = study_samples.sweep_points(space, study_samples.CLOSE)
    key = points[0].choice.key
    found = measured_operating_point(space, points, key)
    same = [p for p in points if p.choice.key == key]
    inside = [p for p in same if space.holds(p.p99, p.throughput)]
    # the sweep's one rule: the point of highest goodput inside the SLA with room
    assert found["measured_load"] in [p.load for p in inside], (found, [p.load for p in inside])
    assert found["measured_goodput_rps"] == round(max(p.goodput for p in inside), 1), found
    assert measured_operating_point(space, points, "no-such-configuration") == {}
    study = on_fake.study(sid)
    on_fake.update_study(sid, result={**study.result, "twin": [
        {"choice": key, "label": "2 instances, delay 2000 µs", "load": 8, "predicted_goodput_rps": 900.0,
         "predicted_p99_ms": 30.0, "measured": True, "measured_load": 8, "measured_goodput_rps": 750.0,
         "measured_p99_ms": 33.0},
        {"choice": "other", "label": "1 instance, delay 0 µs", "load": 4, "predicted_goodput_rps": 500.0,
         "predicted_p99_ms": 20.0, "measured": False}]})
    at = open_page(PAGE)
    (table,) = [t.value for t in tab(at, "Sweep").table if "predicted vs measured" in t.value.columns]
    assert list(table["predicted vs measured"]) == ["+20%", "—"], table
    assert list(table["measured load (in flight)"]) == ["8", "not measured"], table
