"""The fleet view (Latency breakdown page): every replica's figures through Prometheus, and their sum.

Shown when the lab reads a fleet's Prometheus (TBL_PROMETHEUS_URL); one server's page needs none of it.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.lab.ports import LabPort
from app.metrics.catalog import fmt, label
from app.metrics.promql import FLEET, PromQLError, balance
from app.ui.access import guarded

WINDOW_S = 30
SHOWN = ("request_rps", "queue_us", "compute_us", "avg_batch", "fail_rps")
GROWING = 0.5  # pending requests per second: a queue that grows this fast is named


@st.fragment(run_every=5.0)
def fleet_panel(lab: LabPort, model: str) -> None:
    """Per-replica and fleet figures over the last 30 s; which replica's queue grows; how even the load is."""
    where = lab.fleet_url()
    if where is None:
        return
    st.subheader(f"Fleet: {model} on every replica (Prometheus, last {WINDOW_S} s)")
    try:
        figures = lab.fleet_window(model, WINDOW_S) or {}
    except (PromQLError, ValueError) as exc:
        st.warning(f"The fleet's Prometheus did not answer: {guarded(exc)}")
        return
    replicas = sorted(name for name in figures if name != FLEET)
    if not replicas:
        st.info(f"No replica exports {model}'s series to {guarded(where)} yet.")
        return
    rows = [{"replica": name, **{label(k): fmt(k, figures[name].get(k)) for k in SHOWN},
             "pending (avg)": f"{figures[name].get('pending') or 0:.1f}",
             "queue trend (req/s)": f"{figures[name].get('pending_trend') or 0:+.2f}"}
            for name in [*replicas, FLEET]]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    growing = [n for n in replicas if (figures[n].get("pending_trend") or 0) > GROWING]
    if growing:
        st.warning(f"The queue is growing on {', '.join(growing)}: it receives more than it serves.")
    even = balance(figures)
    if even is not None:
        (st.warning if even > 1.5 else st.caption)(
            f"Load balance: the busiest replica serves {even:.2f}× the idlest" + (" — uneven." if even > 1.5 else "."))
    picked = st.selectbox("ReplicaFigures", [FLEET, *replicas], key=f"fleet:{model}:replica")
    cols = st.columns(len(SHOWN))
    for col, key in zip(cols, SHOWN):
        col.metric(label(key), fmt(key, figures[picked].get(key)))
