"""The live charts' rows (app/ui/live/chart_rows.py): a series breaks where a reading is missing or the gap is long."""
from __future__ import annotations

from app.ui.live.chart_rows import series


def test_series_break_at_missing_readings_and_long_gaps():
    rows = [{"t": 100.0, "p99_ms": 5.0}, {"t": 101.0, "p99_ms": None}, {"t": 102.0, "p99_ms": 6.0},
            {"t": 110.0, "p99_ms": 7.0}]
    records = series(rows, ("p99_ms",))
    assert [r["value"] for r in records] == [5.0, None, 6.0, None, 7.0]  # the missing reading; a break 102 -> 110
    assert records[3]["time"] == 103_000.0
