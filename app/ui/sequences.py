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
    rows = [r for r in lab.load.snapshot(window_s=30).timeline if r.get("cls") == "sequences"]
    ok, wrong = sum(r.get("ok") or 0 for r in rows), sum(r.get("wrong_output") or 0 for r in rows)
    other = sum(r.get("failed") or 0 for r in rows) - wrong
    c1, c2, c3 = st.columns(3)
    c1.metric("right answers (last 30 s)", ok)
    c2.metric("wrong_output (last 30 s)", wrong)
    c3.metric("other failures (last 30 s)", other)
