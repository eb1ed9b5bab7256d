"""The metric metadata table: every column described, labels unique, values in display units."""
from __future__ import annotations

import pytest

from app.metrics.catalog import (BREAKDOWN, BY_KEY, CLIENT, CLIENT_METRICS, METRICS, ROW_KEYS, SERVER, SERVER_METRICS,
                                 SUMMARY_WINDOW, better, fmt, label, metric)


def test_every_value_column_has_metadata_and_keys_are_unique():
    assert len(BY_KEY) == len(METRICS)
    assert set(ROW_KEYS) - set(BY_KEY) == {"t", "interval_s", "up", "error", "reset", "delta"}
    assert set(ROW_KEYS) & {m.key for m in CLIENT_METRICS} == set()  # server rows hold server figures only
    assert set(BREAKDOWN) <= set(BY_KEY)
    for m in SERVER_METRICS:
        assert m.side == SERVER and m.unit and m.label and m.description and m.origin.startswith("nv_")
    for m in CLIENT_METRICS:
        assert m.side == CLIENT and m.unit and m.label and m.description


def test_labels_are_unique_so_every_legend_names_one_figure():
    labels = [m.label for m in METRICS]
    assert len(set(labels)) == len(labels), sorted(x for x in labels if labels.count(x) > 1)


def test_values_are_shown_in_display_units_with_separators():
    assert fmt("infer_rps", 11004.2604) == "11,004 infer/s"
    assert fmt("queue_us", 15800.0) == "15.80 ms"
    assert fmt("p99_ms", 314.0) == "314.00 ms"
    assert fmt("avg_batch", 3.14159, unit=False) == "3.14"
    assert fmt("cpu_util", 0.42) == "42 %"
    assert fmt("p99_ms", None) == "—"
    assert label("queue_us") == "queue + batching wait (ms)"


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
