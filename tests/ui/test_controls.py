"""Each page's main controls, driven through AppTest against the live server."""
from __future__ import annotations

import re

import tritonclient.http as triton_http

from tests.ui.apptest import metric, ok, open_page, texts, wait_until, widget


def live_config(triton, model: str) -> dict:
    """Return the config the server serves now."""
    return triton_http.InferenceServerClient(triton.endpoint.host_port).get_model_config(model)


def file_text(triton, model: str) -> str:
    return (triton.repo / model / "config.pbtxt").read_text()


def apply(at):
    """Click Apply on a concept page and return the page after the rerun."""
    page = at.title[0].value
    key = {"Dynamic batching": "dynamic", "Instances (instance_group)": "instances", "Sequence batching": "sequence",
           "Priority & queue policy": "priority"}[page]
    at.button(key=f"{key}:apply").click().run()
    return at


def test_dynamic_delay_apply_then_undo(ui_env, triton, restore_model):
    restore_model("gpu_sim")
    before = file_text(triton, "gpu_sim")
    at = open_page("lab_pages/dynamic_batching.py")
    assert at.button(key="dynamic:apply").disabled, "Apply enabled with no change"
    widget(at.select_slider, "max_queue_delay_microseconds").set_value(2000).run()
    assert "+  max_queue_delay_microseconds: 2000" in at.code[0].value  # the pending diff
    ok(apply(at))
    assert any("reloaded gpu_sim" in t for t in texts(at.success))
    assert int(live_config(triton, "gpu_sim")["dynamic_batching"]["max_queue_delay_microseconds"]) == 2000
    assert "max_queue_delay_microseconds: 2000" in file_text(triton, "gpu_sim")
    assert widget(at.select_slider, "max_queue_delay_microseconds").value == 2000  # redrawn from the new config
    assert any("Change markers in the window" in c for c in texts(at.caption))

    ok(at.button(key="dynamic:undo").click().run())
    assert int(live_config(triton, "gpu_sim")["dynamic_batching"]["max_queue_delay_microseconds"]) == 500
    assert file_text(triton, "gpu_sim") == before
    assert widget(at.select_slider, "max_queue_delay_microseconds").value == 500


def test_dynamic_batching_off_shows_in_diff(ui_env, triton):
    at = open_page("lab_pages/dynamic_batching.py")
    widget(at.toggle, "Dynamic batching").set_value(False).run()
    ok(at)
    assert "-dynamic_batching {" in at.code[0].value
    assert not at.button(key="dynamic:apply").disabled


def test_instances_kind_gpu_is_refused_and_file_untouched(ui_env, triton, restore_model):
    restore_model("gpu_sim")
    before = (triton.repo / "gpu_sim" / "config.pbtxt").read_bytes()
    at = open_page("lab_pages/instances.py")
    widget(at.radio, "Kind").set_value("KIND_GPU").run()
    apply(at)
    assert not at.exception
    errors = texts(at.error)
    assert len(errors) == 1 and "Not applied" in errors[0] and "KIND_GPU" in errors[0], errors
    assert (triton.repo / "gpu_sim" / "config.pbtxt").read_bytes() == before
    assert live_config(triton, "gpu_sim")["instance_group"][0]["kind"] == "KIND_CPU"


def test_instances_count_apply(ui_env, triton, restore_model):
    restore_model("gpu_sim")
    at = open_page("lab_pages/instances.py")
    widget(at.slider, "Instances (instance_group.count)").set_value(2).run()
    ok(apply(at))
    assert live_config(triton, "gpu_sim")["instance_group"][0]["count"] == 2
    assert "count: 2" in file_text(triton, "gpu_sim")


def test_priority_levels_apply(ui_env, triton, restore_model):
    restore_model("gpu_sim")
    at = open_page("lab_pages/priority.py")
    widget(at.number_input, "priority_levels (0 = off)").set_value(2).run()
    ok(at)
    assert len([w for w in at.selectbox if w.label == "timeout action"]) == 2  # one policy row per level
    ok(apply(at))
    dyn = live_config(triton, "gpu_sim")["dynamic_batching"]
    assert int(dyn["priority_levels"]) == 2 and int(dyn["default_priority_level"]) == 1
    assert "priority_levels: 2" in file_text(triton, "gpu_sim")


def test_traffic_start_and_stop(lab):
    at = open_page("lab_pages/dynamic_batching.py")
    assert at.button(key="dynamic:traffic:stop").disabled
    widget(at.slider, "Concurrency").set_value(2).run()
    ok(at.button(key="dynamic:traffic:start").click().run())
    assert lab.traffic().running
    assert lab.traffic_snapshot(window_s=1).spec.concurrency == 2
    assert at.button(key="dynamic:traffic:start").disabled
    wait_until(lambda: any(r.get("ok") for r in lab.traffic_snapshot(window_s=30).timeline), what="answered requests")
    ok(at.run())
    assert metric(at, "traffic") == "running"
    assert any("Running" in i and "concurrency 2" in i for i in texts(at.info)), texts(at.info)
    ok(at.button(key="dynamic:traffic:stop").click().run())
    assert not lab.traffic().running
    assert metric(at, "traffic") == "stopped"
    kinds = [m.text.split(":")[0] for m in lab.markers("gpu_sim") if m.kind == "traffic"]
    assert kinds[-2:] == ["traffic start", "traffic stop"]


def test_the_traffic_form_starts_from_what_runs(lab):
    from loadgen.spec import ArrivalSpec, LoadSpec, Mode  # noqa: PLC0415

    lab.start_traffic(LoadSpec(model="gpu_sim", mode=Mode.OPEN, rate=120.0, arrival=ArrivalSpec(kind="mmpp"),
                               duration_s=60.0))
    at = open_page("lab_pages/dynamic_batching.py")  # its preset is closed loop, concurrency 16
    assert widget(at.radio, "Load").value == "open"
    assert widget(at.number_input, "Rate (req/s)").value == 120.0
    assert widget(at.selectbox, "Arrivals").value == "mmpp"
    assert any("open loop, mmpp arrivals at 120 req/s" in i for i in texts(at.info)), texts(at.info)
    lab.stop_traffic()


def test_a_rate_out_of_range_is_refused_visibly(lab):
    at = open_page("lab_pages/priority.py")  # open loop preset
    widget(at.number_input, "Rate (req/s)").set_value(50000.0).run()
    assert not at.exception
    assert [e.value for e in at.error] == ["Not accepted: rate (req/s) must be between 1 and 5000; 50000.0 was typed."]
    assert at.button(key="priority:traffic:start").disabled


def test_sequence_traffic_gives_right_answers(lab):
    at = open_page("lab_pages/sequence_batching.py")
    assert any("stream_acc is stateful" in s for s in texts(at.success)), texts(at.success)
    widget(at.slider, "Concurrent sequences").set_value(4).run()
    ok(at.button(key="sequence:traffic:start").click().run())
    assert lab.traffic().running
    rows = lambda: [r for r in lab.traffic_snapshot(window_s=30).timeline if r.get("cls") == "sequences"]  # noqa: E731
    wait_until(lambda: sum(r.get("ok") or 0 for r in rows()) >= 20, what="20 answered sequence steps")
    ok(at.run())
    assert int(metric(at, "right answers (last 30 s)").replace(",", "")) >= 20
    assert int(metric(at, "wrong outputs (last 30 s)")) == 0
    ok(at.button(key="sequence:traffic:stop").click().run())
    assert not lab.traffic().running


def test_diagnosis_reads_the_window_under_traffic(lab):
    at = open_page("lab_pages/diagnosis.py")
    assert any(h.value.startswith("Diagnosis — last") for h in at.subheader)
    ok(at.button(key="diagnosis:traffic:start").click().run())

    def diagnosed():
        ok(at.run())
        return [m for m in texts(at.markdown) if m.startswith("client p50 **") and "n=" in m]

    lines = wait_until(diagnosed, timeout_s=45, what="the diagnosis of a window with traffic")
    assert "queue/batching wait" in lines[0] and re.search(r"\(last \d+ s, n=[\d,]+", lines[0]), lines[0]
    ok(at.button(key="diagnosis:traffic:stop").click().run())


def test_three_batchings_checks_each_model(ui_env):
    at = open_page("lab_pages/three_batchings.py")
    table = at.dataframe[0].value.set_index("model")
    assert table.loc["stream_acc", "scheduler"] == "sequence"
    assert set(table["fits"]) == {"yes"}
    at.selectbox(key="three:model").set_value("stream_acc").run()
    ok(at)


def _raw(at, key: str = "dynamic", model: str = "gpu_sim"):
    """Return the raw editor's text area, opening its expander first (collapsed, it renders nothing)."""
    found = [t for t in at.text_area if t.label == "config.pbtxt"]
    if not found:
        at.session_state[f"{key}:{model}:raw:open"] = True
        ok(at.run())
        found = [t for t in at.text_area if t.label == "config.pbtxt"]
    return found[0]


def test_the_raw_editor_does_no_work_while_collapsed(ui_env, triton):
    at = open_page("lab_pages/dynamic_batching.py")
    assert not [t for t in at.text_area if t.label == "config.pbtxt"]  # collapsed: nothing rendered
    assert _raw(at).value == file_text(triton, "gpu_sim")  # opened: the whole file


def test_raw_editor_shows_a_syntax_error_by_line_and_column(ui_env, triton, restore_model):
    restore_model("gpu_sim")
    at = open_page("lab_pages/dynamic_batching.py")
    _raw(at).set_value(_raw(at).value.replace("max_batch_size: 32", "max_batch_size: \x1b[31mlots\x1b[0m")).run()
    (error,) = texts(at.error)
    assert error.startswith("Syntax error — line 2, column 17") and "\x1b" not in error, error


def test_raw_editor_applies_through_the_same_checked_path(ui_env, triton, restore_model):
    restore_model("gpu_sim")
    at = open_page("lab_pages/dynamic_batching.py")
    _raw(at).set_value(_raw(at).value.replace("max_queue_delay_microseconds: 500",
                                              "max_queue_delay_microseconds: 1500")).run()
    assert "+  max_queue_delay_microseconds: 1500" in at.code[-1].value
    ok(at.button(key="dynamic:gpu_sim:raw:apply").click().run())
    assert any("reloaded gpu_sim" in t and "checked: READY" in t for t in texts(at.success)), texts(at.success)
    assert "max_queue_delay_microseconds: 1500" in file_text(triton, "gpu_sim")
    # knobs redrawn with the served value itself (a nearby option would be a change nobody made)
    assert widget(at.select_slider, "max_queue_delay_microseconds").value == 1500
    assert [e.label for e in at.expander if e.label.startswith("Config diff")] == ["Config diff (no change)"]


def test_raw_editor_asks_to_confirm_a_contract_change(ui_env, triton, restore_model):
    restore_model("gpu_sim")
    before = file_text(triton, "gpu_sim")
    at = open_page("lab_pages/dynamic_batching.py")
    _raw(at).set_value(_raw(at).value.replace('name: "OUTPUT"', 'name: "RESULT"')).run()
    assert any("contract" in w for w in texts(at.warning)), texts(at.warning)
    assert at.button(key="dynamic:gpu_sim:raw:apply").disabled  # not until the change is accepted
    next(c for c in at.checkbox if c.label == "I accept the contract change").check().run()
    at.button(key="dynamic:gpu_sim:raw:apply").click().run()
    assert any(e.startswith("Rolled back —") and "lacks output(s) ['RESULT']" in e for e in texts(at.error)), \
        texts(at.error)
    assert file_text(triton, "gpu_sim") == before


def test_undo_is_disabled_with_the_reason_when_there_is_nothing_to_undo(ui_env, triton, restore_model):
    restore_model("mlp")
    at = open_page("lab_pages/dynamic_batching.py")
    at.selectbox(key="dynamic:model").set_value("mlp").run()
    undo = at.button(key="dynamic:undo")
    assert undo.disabled and "nothing to undo" in undo.help


def test_untouched_cost_parameters_keep_their_text(ui_env, triton, restore_model):
    restore_model("gpu_sim")
    at = open_page("lab_pages/instances.py")
    assert at.button(key="instances:apply").disabled, at.code[0].value  # "3000" did not become "3000.0"


def test_pause_freezes_the_live_view(lab):
    at = open_page("lab_pages/dynamic_batching.py")
    widget(at.toggle, "Pause").set_value(True).run()
    ok(at)
    assert any(c.startswith("Paused at ") for c in texts(at.caption)), texts(at.caption)
    frozen = at.session_state["dynamic:paused_at"]
    ok(at.run())
    assert at.session_state["dynamic:paused_at"] == frozen  # the view stays at the moment it was paused
    widget(at.toggle, "Pause").set_value(False).run()
    assert not any(c.startswith("Paused at ") for c in texts(at.caption))


def test_the_status_table_shows_sends_late_and_sends_the_generator_fell_behind_on():
    from app.metrics.catalog import label  # noqa: PLC0415
    from app.traffic.form import TrafficForm, build_spec  # noqa: PLC0415
    from app.ui.traffic.traffic_panel import status_rows  # noqa: PLC0415

    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=100.0))
    window = {"default": {"seconds": 9, "offered_rps": 100.0, "throughput_rps": 99.0, "late": 40, "behind": 3}}
    row = status_rows(spec, window, {})[0]
    assert (row["class"], row[label("late")], row[label("behind")]) == ("default", 40, 3), row
    assert label("behind") == "sends over 10 ms late (requests)"
