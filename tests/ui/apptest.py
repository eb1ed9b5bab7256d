"""Small helpers over streamlit.testing.v1.AppTest: run a page, find widgets by label, read metrics."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from streamlit.testing.v1 import AppTest

from app.paths import ROOT

RUN_TIMEOUT_S = 60
PAGES = sorted((ROOT / "pages").glob("*.py"))


def open_page(path: str | Path) -> AppTest:
    """Run a page (or the entry script) once and return it, failing on any exception or st.error."""
    at = AppTest.from_file(str(ROOT / path), default_timeout=RUN_TIMEOUT_S)
    return ok(at.run())


def ok(at: AppTest) -> AppTest:
    """Fail with the page's own words when the last run raised or showed st.error."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def widget(elements, label: str):
    """Return the one widget of a kind with this label (keys carry a config hash, labels do not)."""
    found = [w for w in elements if w.label == label]
    assert len(found) == 1, f"{len(found)} widgets labelled {label!r}: {[w.label for w in elements]}"
    return found[0]


def metric(at: AppTest, label: str) -> str:
    """Return the value shown by the metric with this label."""
    return widget(at.metric, label).value


def texts(elements) -> list[str]:
    """Return the text of each element (errors, successes, captions)."""
    return [e.value for e in elements]


def wait_until(condition, timeout_s: float = 30.0, what: str = "condition"):
    """Return condition()'s first truthy value, polling; fail after timeout_s naming what and the last value."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {last!r})")
