"""The raw config.pbtxt editor (app/ui/configure/editor.py) on the FakeLab: nothing done while collapsed, syntax errors
by line and column, the same checked path as the knobs (validate, contract, reload, verify, write), and a model with
no config.pbtxt getting one written."""
from __future__ import annotations

from tests.unit.ui.apptest import no_exception, ok, open_page, texts, widget

PAGE = "lab_pages/dynamic_batching.py"


def raw(at, key: str = "dynamic", model: str = "gpu_sim"):
    """Return the raw editor's text area, opening its expander first (collapsed, it renders nothing)."""
    found = [t for t in at.text_area if t.label == "config.pbtxt"]
    if not found:
        at.session_state[f"{key}:{model}:raw:open"] = True
        ok(at.run())
        found = [t for t in at.text_area if t.label == "config.pbtxt"]
    return found[0]


def file_text(lab, model: str = "gpu_sim") -> str:
    return (lab.repo_copy / model / "config.pbtxt").read_text()


def test_collapsed_it_does_nothing_and_opened_it_holds_the_whole_file(on_fake):
    at = open_page(PAGE)
    assert not [t for t in at.text_area if t.label == "config.pbtxt"]  # collapsed: nothing rendered
    assert raw(at).value == file_text(on_fake)


def test_a_syntax_error_is_said_by_line_and_column_without_terminal_codes(on_fake):
    at = open_page(PAGE)
    raw(at).set_value(raw(at).value.replace("max_batch_size: 32", "max_batch_size: \x1b[31mlots\x1b[0m")).run()
    (error,) = texts(at.error)
    assert error.startswith("Syntax error — line 2, column 17") and "\x1b" not in error, error


def test_an_edit_applies_through_the_checked_path_and_the_knobs_follow(on_fake):
    at = open_page(PAGE)
    raw(at).set_value(raw(at).value.replace("max_queue_delay_microseconds: 500",
                                            "max_queue_delay_microseconds: 1500")).run()
    assert "+  max_queue_delay_microseconds: 1500" in at.code[-1].value
    ok(at.button(key="dynamic:gpu_sim:raw:apply").click().run())
    assert any("reloaded gpu_sim" in t and "checked: READY" in t for t in texts(at.success)), texts(at.success)
    assert "max_queue_delay_microseconds: 1500" in file_text(on_fake)
    # knobs redrawn with the served value itself (a nearby option would be a change nobody made)
    assert widget(at.select_slider, "max_queue_delay_microseconds").value == 1500
    assert [e.label for e in at.expander if e.label.startswith("Config diff")] == ["Config diff (no change)"]


def test_a_contract_change_waits_for_its_confirmation_and_a_failed_check_rolls_it_back(on_fake):
    before = file_text(on_fake)
    at = open_page(PAGE)
    raw(at).set_value(raw(at).value.replace('name: "OUTPUT"', 'name: "RESULT"')).run()
    assert any("contract" in w for w in texts(at.warning)), texts(at.warning)
    assert at.button(key="dynamic:gpu_sim:raw:apply").disabled  # not until the change is accepted
    widget(at.checkbox, "I accept the contract change").check().run()
    on_fake.fail_smoke("gpu_sim", "the answer lacks output(s) ['RESULT']")  # what the real model answers
    no_exception(at.button(key="dynamic:gpu_sim:raw:apply").click().run())
    assert any(e.startswith("Rolled back —") and "lacks output(s) ['RESULT']" in e for e in texts(at.error)), \
        texts(at.error)
    assert file_text(on_fake) == before


def test_a_model_without_config_pbtxt_shows_what_serves_and_an_edit_writes_the_file(on_third_party):
    at = open_page(PAGE)
    ok(at.selectbox(key="dynamic:model").set_value("py_auto").run())
    text = raw(at, model="py_auto").value
    assert "max_batch_size: 8" in text and 'name: "INPUT"' in text  # what Triton auto-completed
    assert any("`py_auto` has no config.pbtxt" in c for c in texts(at.caption)), texts(at.caption)
    raw(at, model="py_auto").set_value(text.replace("dynamic_batching {\n}", "dynamic_batching {\n"
                                                    "  max_queue_delay_microseconds: 100\n}")).run()
    ok(at.button(key="dynamic:py_auto:raw:apply").click().run())
    assert "max_queue_delay_microseconds: 100" in file_text(on_third_party, "py_auto")
    ok(at.button(key="dynamic:undo").click().run())  # back to no file: Triton completes it again
    assert not (on_third_party.repo_copy / "py_auto" / "config.pbtxt").exists()
