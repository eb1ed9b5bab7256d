"""Sequence correctness: every stream_acc answer is checked against the running sum."""
from __future__ import annotations

import time

import streamlit as st

from app.config.batching_fit import check
from app.lab.ports import LabPort
from app.metrics.catalog import label

WINDOW_S = 30


def correctness_panel(lab: LabPort, model: str = "stream_acc") -> None:
    """Show right and wrong sequence outputs in the window, and whether the scheduler fits the model."""
    _correctness(lab, model)


@st.fragment(run_every=2.0)
def _correctness(lab: LabPort, model: str) -> None:
    st.subheader("Are the sequences right?")
    try:
        fit = check(model, lab.served_config(model))
        (st.success if fit.ok else st.error)(f"{model} is {fit.kind}; scheduler: {fit.batching} — {fit.verdict}")
    except Exception as exc:  # noqa: BLE001 - shown, not crashed on
        st.warning(str(exc))
    now = time.time()
    row = lab.measure(model, now - WINDOW_S, now).row("sequences")
    ok, wrong = row.ok, row.wrong_output
    other = row.failed - wrong
    c1, c2, c3 = st.columns(3)
    c1.metric(f"right answers (last {WINDOW_S} s)", f"{ok:,}")
    c2.metric(f"{label('wrong_output', False)} (last {WINDOW_S} s)", f"{wrong:,}")
    c3.metric(f"other failures (last {WINDOW_S} s)", f"{other:,}")
