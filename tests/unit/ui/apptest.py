"""Small helpers over streamlit.testing.v1.AppTest: run a page, find widgets by label, read what a page says."""
from __future__ import annotations

import functools
import re
from pathlib import Path

from streamlit.components.v2 import manifest_scanner
from streamlit.testing.v1 import AppTest

from app.paths import ROOT

RUN_TIMEOUT_S = 60  # a bound on a hung run only: a page runs in well under a second on the FakeLab

# Each AppTest scans every installed distribution's metadata for Streamlit components on its first run (a dashboard
# does it once, at its start): 18 scans took 2.08 s of CPU (2026-12-05). The packages do not change while the tests
# run: a test process scans once.
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)

PAGES = sorted((ROOT / "lab_pages").glob("*.py"))


def open_page(path: str | Path) -> AppTest:
    """Run a page (or the entry script) once and return it, failing on any exception or st.error."""
    return ok(AppTest.from_file(str(ROOT / path), default_timeout=RUN_TIMEOUT_S).run())


def run_page(path: str | Path) -> AppTest:
    """Run a page once and return it, whatever it shows (errors included)."""
    return no_exception(AppTest.from_file(str(ROOT / path), default_timeout=RUN_TIMEOUT_S).run())


def run_function(script, *args) -> AppTest:
    """Run a function's body as a page (AppTest.from_function) and return it, failing on an exception."""
    return no_exception(AppTest.from_function(script, args=args, default_timeout=RUN_TIMEOUT_S).run())


def no_exception(at: AppTest) -> AppTest:
    """Fail with the page's own words when the last run raised."""
    assert not at.exception, [e.value for e in at.exception]
    return at


def ok(at: AppTest) -> AppTest:
    """Fail with the page's own words when the last run raised or showed st.error."""
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    return at


def widget(elements, label: str):
    """Return the one widget of a kind with this label (keys carry a config hash, labels do not)."""
    found = [w for w in elements if w.label == label]
    assert len(found) == 1, f"{len(found)} widgets labelled {label!r}: {[w.label for w in elements]}"
    return found[0]


def button(at: AppTest, label: str):
    """Return the one button with this label (a form's submit button included)."""
    return widget(at.button, label)


def labels(elements) -> list[str]:
    """Return the labels of widgets."""
    return [w.label for w in elements]


def metric(at: AppTest, label: str) -> str:
    """Return the value shown by the metric with this label."""
    return widget(at.metric, label).value


def texts(elements) -> list[str]:
    """Return the text of each element (errors, successes, captions) as Markdown shows it: a backslash before
    ASCII punctuation is an escape (CommonMark), so the character stands alone."""
    return [shown(e.value) for e in elements]


def shown(markdown: str) -> str:
    """Return Markdown source with its backslash escapes resolved (the rest of the Markdown stays)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def said(at: AppTest) -> str:
    """Return every alert, Markdown block and caption of the last run, as shown, one a line."""
    return "\n".join(texts([*at.error, *at.warning, *at.info, *at.success, *at.markdown, *at.caption]))


def controls(at: AppTest) -> list:
    """Return every widget a person could act on."""
    return [*at.button, *at.text_input, *at.number_input, *at.slider, *at.select_slider, *at.selectbox, *at.radio,
            *at.checkbox, *at.toggle, *at.multiselect, *at.text_area, *at.get("download_button")]


def soon(condition, timeout_s: float = 10.0, what: str = "condition"):
    """Return condition()'s first truthy value, asked every 10 ms: for the lab's background job thread to get
    somewhere (a bound on a hang, never a claim about time)."""
    import time  # noqa: PLC0415

    import pytest  # noqa: PLC0415

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.01)
    pytest.fail(f"no {what} within {timeout_s:g} s")
