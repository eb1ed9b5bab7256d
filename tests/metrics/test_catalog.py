"""The metric metadata table and the package's independence from Streamlit."""
from __future__ import annotations

import subprocess
import sys

import pytest

from app.metrics.catalog import BREAKDOWN, BY_KEY, METRICS, ROW_KEYS, SUMMARY_WINDOW, better, metric
from app.paths import ROOT


def test_every_value_column_has_metadata_and_keys_are_unique():
    assert len(BY_KEY) == len(METRICS)
    assert set(ROW_KEYS) - set(BY_KEY) == {"t", "interval_s", "up", "error", "reset"}
    assert set(BREAKDOWN) <= set(BY_KEY)
    for m in METRICS:
        assert m.unit and m.label and m.description and m.source.startswith("nv_")


def test_server_quantiles_say_they_are_a_sliding_window():
    windows = {m.key: m.window for m in METRICS}
    assert all(windows[k] == SUMMARY_WINDOW for k in ("p50_us", "p90_us", "p95_us", "p99_us", "queue_p99_us"))
    assert windows["infer_rps"] == "scrape interval"


def test_better_follows_the_direction():
    assert better("p99_us", 10, 20) and not better("p99_us", 20, 10)
    assert better("infer_rps", 20, 10)
    assert not better("cpu_util", 0.1, 0.9) and not better("cpu_util", 0.9, 0.1)


def test_unknown_key_names_the_known_ones():
    with pytest.raises(KeyError, match="known: infer_rps"):
        metric("p42_us")


def test_metrics_package_imports_without_streamlit():
    code = ("import sys, app.metrics.poller, app.metrics.catalog; "
            "assert 'streamlit' not in sys.modules, 'streamlit imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
