"""Experiments: save measured runs, compare two configurations side by side."""
import difflib
import time

import pandas as pd
import streamlit as st

from app.experiments.compare import compare
from app.metrics.catalog import fmt, label
from app.ui.access import can_operate
from app.ui.layout import lab_or_stop
from app.ui.traffic import traffic_status

lab = lab_or_stop()
st.title("Experiments")
st.markdown("Save the traffic run you just measured together with the config it ran against; pick two runs to "
            "compare them side by side. A run covers the time since its model's last config change (reload bands "
            "left out); client percentiles merge every request of that window, server figures are counter "
            "differences over it.")
traffic_status(lab, lab.load.running)
if can_operate():
    c1, c2 = st.columns([3, 1])
    name = c1.text_input("Label for the current run", placeholder="e.g. delay 2000 µs, 2 instances", key="exp:label")
    if c2.button("Save current run", type="primary", key="exp:save", width="stretch"):
        try:
            saved = lab.save_experiment(name)
        except ValueError as exc:
            st.error(str(exc))
        else:
            st.success(f"Saved experiment {saved.id}: {saved.label}")
runs = lab.experiments.list()
if not runs:
    st.info("No experiments yet.")
    st.stop()


def _window(e) -> str:
    if e.started_at is None or e.ended_at is None:
        return "—"
    return f"{time.strftime('%H:%M:%S', time.localtime(e.started_at))} + {e.ended_at - e.started_at:,.0f} s"


table = pd.DataFrame([{
    "id": e.id, "label": e.label, "model": e.model, "window": _window(e),
    label("p99_ms"): fmt("p99_ms", (e.client.get("all") or {}).get("p99_ms"), unit=False),
    "n": (e.client.get("all") or {}).get("latency_n"),
    label("throughput_rps"): fmt("throughput_rps", (e.client.get("all") or {}).get("throughput_rps"), unit=False),
    label("avg_batch"): fmt("avg_batch", e.server.get("avg_batch"), unit=False),
} for e in runs])
st.dataframe(table, hide_index=True, width="stretch")
ids = [e.id for e in runs]
names = {e.id: f"{e.id}: {e.label}" for e in runs}
a_col, b_col = st.columns(2)
a_id = a_col.selectbox("A", ids, index=min(1, len(ids) - 1), format_func=names.get, key="exp:a")
b_id = b_col.selectbox("B", ids, index=0, format_func=names.get, key="exp:b")
a, b = lab.experiments.get(a_id), lab.experiments.get(b_id)
st.subheader(f"A: {a.label}  vs  B: {b.label}")
st.dataframe(pd.DataFrame(compare(a, b)), hide_index=True, width="stretch")
diff = "".join(difflib.unified_diff(a.config_text.splitlines(True), b.config_text.splitlines(True), "A", "B"))
with st.expander("Config diff A → B", expanded=bool(diff)):
    st.code(diff or "same config", language="diff")
