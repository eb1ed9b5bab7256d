"""Each concept page's knobs (app/ui/configure/knob_widgets.py) on the FakeLab: drawn from the config the model
serves, proposing nothing until moved, and what they propose applied through the real safe apply."""
from __future__ import annotations

from app.config.read import settings_of
from app.metrics.gpu import Gpu, GpuView
from tests.unit.ui.apptest import labels, no_exception, ok, open_page, run_function, texts, widget


def served(lab, model: str = "gpu_sim"):
    return settings_of(lab.served_config(model))


def test_opening_a_page_proposes_nothing_and_untouched_cost_parameters_keep_their_text(on_fake):
    for page, key in (("instances", "instances"), ("dynamic_batching", "dynamic"), ("priority", "priority"),
                      ("sequence_batching", "sequence")):
        at = open_page(f"lab_pages/{page}.py")
        assert at.button(key=f"{key}:apply").disabled, (page, at.code[0].value)  # "3000" did not become "3000.0"
        assert [e.label for e in at.expander if e.label.startswith("Config diff")] == ["Config diff (no change)"]


def every_knob_set_on_every_model() -> None:
    """Draw each concept page's knobs for each READY model of the lab; keep those that would propose a change."""
    import streamlit as st  # noqa: PLC0415 - AppTest runs this function's body as the page

    from app.config.read import settings_of  # noqa: PLC0415
    from app.ui.configure import knob_widgets  # noqa: PLC0415
    from app.ui.state import get_lab  # noqa: PLC0415

    lab, moved = get_lab(), []
    for model in sorted(m.name for m in lab.status().models if m.state == "READY"):
        served = settings_of(lab.served_config(model))
        for name in ("instances", "dynamic", "priority", "sequence"):
            if getattr(knob_widgets, name)(served, f"{name}:{model}") != served:
                moved.append(f"{name} knobs on {model}")
    st.session_state["moved"] = moved


def test_on_a_repository_the_lab_did_not_write_no_knob_proposes_a_change_nobody_made(on_third_party):
    at = run_function(every_knob_set_on_every_model)
    assert at.session_state["moved"] == []


def test_dynamic_batching_off_shows_in_the_diff(on_fake):
    at = open_page("lab_pages/dynamic_batching.py")
    ok(widget(at.toggle, "Dynamic batching").set_value(False).run())
    assert "-dynamic_batching {" in at.code[0].value and not at.button(key="dynamic:apply").disabled


def test_an_instance_count_applies_and_is_written(on_fake):
    at = open_page("lab_pages/instances.py")
    widget(at.slider, "Instances (instance_group.count)").set_value(2).run()
    ok(at.button(key="instances:apply").click().run())
    assert served(on_fake).instance_groups[0].count == 2
    assert "count: 2" in (on_fake.repo_copy / "gpu_sim" / "config.pbtxt").read_text()


def test_kind_gpu_on_a_cpu_server_is_refused_and_the_file_untouched(on_fake):
    before = (on_fake.repo_copy / "gpu_sim" / "config.pbtxt").read_bytes()
    at = open_page("lab_pages/instances.py")
    widget(at.radio, "Kind").set_value("KIND_GPU").run()
    assert not [m for m in at.multiselect if m.label.startswith("GPUs")]  # no GPU to list
    no_exception(at.button(key="instances:apply").click().run())
    errors = texts(at.error)
    assert len(errors) == 1 and "Not applied" in errors[0] and "KIND_GPU" in errors[0], errors
    assert (on_fake.repo_copy / "gpu_sim" / "config.pbtxt").read_bytes() == before
    assert served(on_fake).instance_groups[0].kind.value == "KIND_CPU"


def test_on_a_gpu_server_kind_gpu_lists_its_gpus(on_fake):
    on_fake.set_gpus(GpuView((Gpu("GPU-1", 0.25, 1e9, 4e10), Gpu("GPU-2", 0.75, 3e9, 4e10)), 1, (1,), None, None))
    at = open_page("lab_pages/instances.py")
    widget(at.radio, "Kind").set_value("KIND_GPU").run()
    gpus = widget(at.multiselect, "GPUs (instance_group.gpus; none: every GPU)")
    assert gpus.options == ["0", "1"], gpus.options
    ok(gpus.set_value([1]).run())
    assert "gpus: 1" in at.code[0].value, at.code[0].value


def test_priority_levels_get_a_policy_row_each_and_apply(on_fake):
    at = open_page("lab_pages/priority.py")
    ok(widget(at.number_input, "priority_levels (0 = off)").set_value(2).run())
    assert labels(at.selectbox).count("timeout action") == 2  # one policy row per level
    ok(at.button(key="priority:apply").click().run())
    dyn = served(on_fake).dynamic_batching
    assert (dyn.priority_levels, dyn.default_priority_level) == (2, 1)
    assert "priority_levels: 2" in (on_fake.repo_copy / "gpu_sim" / "config.pbtxt").read_text()


def test_a_stateful_model_can_be_switched_to_the_wrong_scheduler_and_back_by_undo(on_fake):
    at = open_page("lab_pages/sequence_batching.py")
    ok(widget(at.radio, "Scheduler").set_value("dynamic batching (wrong for a stateful model)").run())
    assert "+dynamic_batching {" in at.code[0].value and "-sequence_batching {" in at.code[0].value
    ok(at.button(key="sequence:apply").click().run())
    asked = [w for w in texts(at.warning) if w.startswith("**This changes the model's contract")]
    assert asked and "sequence control inputs" in asked[0], texts(at.warning)  # the controls go: asked first
    assert served(on_fake, "stream_acc").sequence_batching is not None
    no_exception(widget(at.button, "Apply anyway: I accept the contract change").click().run())
    assert served(on_fake, "stream_acc").dynamic_batching is not None
    assert any("scheduler: dynamic — broken" in e for e in texts(at.error)), texts(at.error)  # the page says so
    ok(at.button(key="sequence:undo").click().run())
    assert served(on_fake, "stream_acc").sequence_batching is not None
    assert widget(at.radio, "Scheduler").value == "sequence batching"
