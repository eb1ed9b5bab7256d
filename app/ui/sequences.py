"""Sequence correctness: every stream_acc answer is checked against the running sum."""
from __future__ import annotations

import streamlit as st

from app.fit import check
from app.lab import Lab


def correctness_panel(lab: Lab, model: str = "stream_acc") -> None:
    """Show right and wrong sequence outputs in the window, and whether the scheduler fits the model."""
    _correctness(lab, model)


@st.fragment(run_every=1.0)
def _correctness(lab: Lab, model: str) -> None:
    st.subheader("Are the sequences right?")
    try:
        fit = check(model, lab.config.current(model))
        (st.success if fit.ok else st.error)(f"{model} is {fit.kind}; scheduler: {fit.batching} — {fit.verdict}")
    except Exception as exc:  # noqa: BLE001 - shown, not crashed on
        st.warning(str(exc))
    counts = _outcomes(lab.load.snapshot(window_s=60).summary or {})
    c1, c2, c3 = st.columns(3)
    c1.metric("right answers (60 s)", counts.get("ok", 0))
    c2.metric("wrong_output (60 s)", counts.get("wrong_output", 0))
    c3.metric("errors (60 s)", sum(v for k, v in counts.items() if k not in ("ok", "wrong_output")))


def _outcomes(summary: dict) -> dict:
    for name, entry in summary.items():
        if name != "all" and isinstance(entry, dict) and entry.get("sequence"):
            return entry.get("outcomes", {})
    return (summary.get("all") or {}).get("outcomes", {})
