"""Small helpers over streamlit.testing.v1.AppTest: run a page, find widgets by label, read metrics."""
from __future__ import annotations

import functools
import re
from pathlib import Path

from streamlit.components.v2 import manifest_scanner
from streamlit.testing.v1 import AppTest

from app.paths import ROOT
from tests.helpers import wait_until  # noqa: F401 - the UI tests take it from here

RUN_TIMEOUT_S = 60

# Each AppTest scans every installed distribution's metadata for Streamlit components on its first run (a dashboard
# does it once, at its start): test_controls.py's 18 scans took 2.08 s of CPU, 0.11 s shared (2026-12-05). The
# packages do not change while the tests run: a test process scans once.
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)

PAGES = sorted((ROOT / "lab_pages").glob("*.py"))


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
    """Return the text of each element (errors, successes, captions) as Markdown shows it: a backslash before
    ASCII punctuation is an escape (CommonMark), so the character stands alone."""
    return [shown(e.value) for e in elements]


def shown(markdown: str) -> str:
    """Return Markdown source with its backslash escapes resolved (the rest of the Markdown stays)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)

