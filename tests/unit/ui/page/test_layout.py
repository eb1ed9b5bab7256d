"""A page's scaffolding on the FakeLab (app/ui/page/layout.py): the config panel's Apply and Undo through the real
safe apply (the file in the FakeLab's repository copy, the served config, the marker), what a refused load, a failed
smoke check, a stale base or a server that takes no Apply leave behind (config.pbtxt byte-identical), the server
banner, and a lab that could not start."""
from __future__ import annotations

from dataclasses import replace

import pytest

from app.config.edits import set_settings
from app.config.read import settings_of
from app.server.control_mode import ControlMode
from tests.fakes.fake_lab import FakeLab
from tests.helpers import wait_until
from tests.unit.ui.apptest import labels, no_exception, ok, open_page, run_page, texts, widget

PAGE = "lab_pages/dynamic_batching.py"


def delay(lab, model: str = "gpu_sim") -> int:
    return settings_of(lab.served_config(model)).dynamic_batching.max_queue_delay_microseconds


def config_file(lab, model: str = "gpu_sim"):
    return lab.repo_copy / model / "config.pbtxt"


def with_delay_2000():
    at = open_page(PAGE)
    assert at.button(key="dynamic:apply").disabled, "Apply enabled with no change"
    widget(at.select_slider, "max_queue_delay_microseconds").set_value(2000).run()
    assert "+  max_queue_delay_microseconds: 2000" in at.code[0].value  # the pending diff
    return at


def test_apply_serves_writes_and_marks_then_undo_brings_back_the_file(on_fake):
    before = config_file(on_fake).read_bytes()
    at = with_delay_2000()
    ok(at.button(key="dynamic:apply").click().run())
    assert any("reloaded gpu_sim" in t for t in texts(at.success)), texts(at.success)
    assert delay(on_fake) == 2000 and "max_queue_delay_microseconds: 2000" in config_file(on_fake).read_text()
    assert widget(at.select_slider, "max_queue_delay_microseconds").value == 2000  # redrawn from the new config
    change = on_fake.last_change("gpu_sim")
    assert change.kind == "apply" and change.ok and "2000" in change.text, change
    assert any(c.startswith("Change markers in the window: ") and not c.startswith("Change markers in the window: 0")
               for c in texts(at.caption)), texts(at.caption)

    ok(at.button(key="dynamic:undo").click().run())
    assert delay(on_fake) == 500 and config_file(on_fake).read_bytes() == before
    assert widget(at.select_slider, "max_queue_delay_microseconds").value == 500
    assert on_fake.last_change("gpu_sim").kind == "undo"


@pytest.mark.parametrize(("make_it_fail", "said"), [
    (lambda lab: lab.refuse_loads("gpu_sim", "failed to load 'gpu_sim': out of memory"),
     ("Not applied — ", "out of memory")),
    (lambda lab: lab.fail_smoke("gpu_sim", "the smoke request got HTTP 500: model crashed"),
     ("Rolled back — ", "model crashed")),
], ids=["refused load", "failed smoke check"])
def test_a_change_the_server_does_not_take_says_why_and_leaves_the_file_alone(on_fake, make_it_fail, said):
    before = config_file(on_fake).read_bytes()
    at = with_delay_2000()
    make_it_fail(on_fake)
    no_exception(at.button(key="dynamic:apply").click().run())
    errors = texts(at.error)
    assert len(errors) == 1 and errors[0].startswith(said[0]) and said[1] in errors[0], errors
    assert config_file(on_fake).read_bytes() == before and delay(on_fake) == 500
    change = on_fake.last_change("gpu_sim")
    assert not change.ok and change.text.endswith("not applied"), change
    assert not [s for s in texts(at.success) if "reloaded" in s]


def test_a_change_applied_meanwhile_elsewhere_redraws_the_knobs_and_applies_nothing_stale(on_fake):
    at = with_delay_2000()
    current = on_fake.served_config("gpu_sim")  # another session applies first
    s = settings_of(current)
    on_fake.apply("gpu_sim", set_settings(current, replace(s, dynamic_batching=replace(
        s.dynamic_batching, max_queue_delay_microseconds=100))), "another session's change")
    meanwhile = config_file(on_fake).read_bytes()
    ok(at.button(key="dynamic:apply").click().run())  # the form was built on 500: its Apply is gone with it
    assert widget(at.select_slider, "max_queue_delay_microseconds").value == 100
    assert at.button(key="dynamic:apply").disabled and not texts(at.success)
    assert config_file(on_fake).read_bytes() == meanwhile and delay(on_fake) == 100


def test_undo_is_disabled_with_the_reason_when_there_is_nothing_to_undo(on_fake):
    at = open_page(PAGE)
    ok(at.selectbox(key="dynamic:model").set_value("mlp").run())
    undo = at.button(key="dynamic:undo")
    assert undo.disabled and "nothing to undo" in undo.help, undo.help


def test_a_server_that_takes_no_apply_says_why_and_offers_none(tmp_path, on_fake):
    from app.lab import owner  # noqa: PLC0415

    why = "the server runs with --model-control-mode=none: restart it with --model-control-mode=explicit"
    none = FakeLab(tmp_path / "none", control=ControlMode("none", "the load API refused a probe", why_not=why))
    owner.replace(lambda: none)
    try:
        at = open_page(PAGE)
        widget(at.select_slider, "max_queue_delay_microseconds").set_value(2000).run()
        assert at.button(key="dynamic:apply").disabled and at.button(key="dynamic:undo").disabled
        assert any(i.startswith("Apply is off: ") and "--model-control-mode=explicit" in i for i in texts(at.info))
    finally:
        owner.close()
        none.close()


def test_the_server_banner_comes_and_goes_with_the_server(on_fake):
    at = open_page("lab_pages/three_batchings.py")
    on_fake.set_down()
    at.run()
    assert any(w.startswith("Server not answering: ") for w in texts(at.warning)), texts(at.warning)
    on_fake.set_down(False)

    def gone() -> bool:
        on_fake.catch_up()
        at.run()
        return not any(w.startswith("Server not answering") for w in texts(at.warning))

    # the live view's frame is shared for the rest of its one-second tick (app/ui/live/live_frame.py TICK_S): the
    # run just after the server is back may still draw the frame built while it was down; the next tick's may not
    wait_until(gone, 10, "the banner to go once the server answers")


def test_a_lab_that_could_not_start_is_said_and_tried_again(on_fake, monkeypatch):
    from app.lab import owner  # noqa: PLC0415

    owner.close()  # no Lab yet: the page builds the process's one
    monkeypatch.setenv("TBL_SERVER", "bogus")  # Lab.create refuses it before starting anything
    monkeypatch.setenv("TBL_DUMPABLE", "1")  # get_lab would seal this test process
    at = run_page("lab_pages/overview.py")
    assert any("could not be started" in e and "TBL_SERVER must be embedded or docker" in e for e in texts(at.error))
    assert owner.current() is None  # nothing kept: no broken singleton
    owner.replace(lambda: on_fake)  # what the next try builds
    ok(widget(at.button, "Try again").click().run())
    assert at.title[0].value == "Triton Batching Lab" and "Try again" not in labels(at.button)
