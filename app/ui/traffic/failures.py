"""What failing traffic says on screen: the share that failed, each kind in its own words, the server's own count.

Pure text (Markdown) for the live view, the traffic status and the demo; no Streamlit here, so tests read it.
"""
from __future__ import annotations

import time

from app.diagnosis.patterns import FAILING_SHARE, percent
from app.metrics.catalog import fmt, label
from app.timeline.sides import ServerFigures
from app.ui.text import literal

KINDS_SHOWN = 3  # error kinds with their words under the status table (the most frequent first)


def failing_alert(failed: int, ended: int, latest: dict | None, window: str) -> str | None:
    """Return the alert for a window whose attempts fail at or above the diagnosis threshold (None below it)."""
    if not ended or failed / ended < FAILING_SHARE:
        return None
    words = f": {literal(latest['latest'])}" if latest else ""
    return f"**{percent(failed / ended)} of requests failing** ({failed:,} of {ended:,}, {window}){words}"


def failed_cell(row: dict) -> str:
    """Return a status-table cell: the failed share and the count of each kind, e.g. '100.0 (http_400 812)'."""
    share = row.get("failed_share")
    if share is None:
        return "—"
    kinds = ", ".join(f"{k} {n:,}" for k, n in _kinds(row))
    return fmt("failed_share", share, unit=False) + (f" ({kinds})" if kinds else "")


def failure_lines(row: dict, server: dict[str, ServerFigures], seconds: float) -> list[str]:
    """Return Markdown lines on a window's failures: the share, each kind's first and latest words with their times,
    and what the server counted over the same window per model (`server`: model -> server window figures)."""
    failed = int(row.get("failed") or 0)
    if not failed:
        return []
    ended = failed + int(row.get("ok") or 0)
    lines = [f"**Requests are failing: {percent(failed / ended)} of the attempts that ended in the last "
             f"{seconds:g} s** ({failed:,} of {ended:,})."]
    texts = row.get("error_texts") or {}
    for kind, n in _kinds(row)[:KINDS_SHOWN]:
        text = texts.get(kind)
        if text is None:
            lines.append(f"`{kind}` × {n:,} (no words recorded)")
            continue
        line = f"`{kind}` × {n:,} — latest ({_clock(text['latest_t'])}): {literal(text['latest'])}"
        if text["first"] != text["latest"]:
            line += f" · first ({_clock(text['first_t'])}): {literal(text['first'])}"
        lines.append(line)
    refused = any(k.startswith("http_4") for k, _ in _kinds(row))
    for model, figures in sorted(server.items()):
        lines.append(_server_line(model, figures, refused))
    return lines


def _server_line(model: str, figures: ServerFigures, refused: bool) -> str:
    """Return what nv_inference_request_failure says of a model over the window."""
    if not figures.intervals:
        return f"Server side (`{model}`): no scrape in the window yet."
    count = figures.fail_count or 0
    reasons = {k: v for k, v in (figures.fail_by_reason or {}).items() if v}
    by_reason = ", ".join(f"{k} {v:,.1f}" for k, v in sorted(reasons.items())) or "none"
    line = (f"Server side (`{model}`, nv\\_inference\\_request\\_failure): {label('fail_count', False)} "
            f"{fmt('fail_count', count)} · {label('fail_by_reason')}: {by_reason}")
    if not count and refused:
        line += (" — Triton counts no request it refuses before the model runs (wrong shape, batch size over "
                 "max\\_batch\\_size: HTTP 400), so only the client sees these")
    return line


def _kinds(row: dict) -> list[tuple[str, int]]:
    """Return the failure kinds of a row, the most frequent first (cancelled attempts are no failures)."""
    kinds = {k: n for k, n in (row.get("errors_by_kind") or {}).items() if k != "cancelled" and n}
    return sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))
