"""The A/B form's configurations (app/ui/studies/ab_arms.py) on the FakeLab: each named and diffed against what serves
before the run, from knobs set over the serving config or a pasted config.pbtxt; one that cannot be compared says why
and Start stays off."""
from __future__ import annotations

import re

from tests.unit.ui.apptest import no_exception, ok, open_page, shown, texts, widget

MODEL = "gpu_sim"
KEY = f"exp:ab_knob1:{MODEL}:"


def names(at) -> list[str]:
    return [shown(m.value) for m in at.markdown if m.value.startswith(("**A:**", "**B:**"))]


def test_each_configuration_is_named_and_diffed_before_the_run(on_fake):
    at = open_page("lab_pages/experiments.py")
    assert widget(at.selectbox, "Configuration A").value == "serving now"
    assert widget(at.selectbox, "Configuration B").value == "set knobs over the serving config"
    serving = "1 instance, max batch 32, delay 500 µs, preferred [4, 8] (serving)"
    assert names(at) == [f"**A:** {serving}", f"**B:** {serving}"]  # B's knobs start at the serving values
    at.number_input(key=KEY + "instances").set_value(2).run()
    ok(at.number_input(key=KEY + "delay").set_value(5000).run())
    assert names(at) == [f"**A:** {serving}", "**B:** instances 1 → 2, delay 500 → 5000 µs"], names(at)
    codes = [c.value for c in at.code]
    assert "the same config as serving" in codes, codes  # A's diff
    diff = next(c for c in codes if c.startswith("--- serving"))
    assert re.search(r"^\+\s*max_queue_delay_microseconds: 5000$", diff, re.M), diff
    assert re.search(r"^\+\s*count: 2$", diff, re.M), diff


def test_a_configuration_that_cannot_be_compared_says_why_and_start_stays_off(on_fake):
    at = open_page("lab_pages/experiments.py")
    no_exception(at.text_input(key=KEY + "preferred").set_value("64").run())  # above gpu_sim's max_batch_size 32
    assert texts(at.error) == ["preferred sizes [64] are above max_batch_size 32: lower them or set "
                               "max_batch_size=64"], texts(at.error)
    assert widget(at.button, "Start comparison").disabled
    at.text_input(key=KEY + "preferred").set_value("").run()
    at.selectbox(key="exp:ab_arm2").set_value("paste a config.pbtxt").run()
    no_exception(at.text_area(key=f"exp:ab_paste2:{MODEL}").set_value('name: "another_model"\nmax_batch_size: 8\n')
                 .run())
    assert len(at.error) == 1 and "is for model 'another_model', not 'gpu_sim'" in texts(at.error)[0], texts(at.error)
