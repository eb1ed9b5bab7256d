"""Experiments: save measured runs, compare two configurations side by side."""
import difflib

import pandas as pd
import streamlit as st

from app.experiments.compare import compare
from app.ui.layout import lab_or_stop

lab = lab_or_stop()
st.title("Experiments")
st.markdown("Save the traffic run you just measured together with the config it ran against; pick two runs to "
            "compare them side by side. Client percentiles are the authority for p99; server columns are means over the run.")
c1, c2 = st.columns([3, 1])
label = c1.text_input("Label for the current run", placeholder="e.g. delay 2000 µs, 2 instances", key="exp:label")
if c2.button("Save current run", type="primary", key="exp:save", width="stretch"):
    try:
        saved = lab.save_experiment(label)
    except ValueError as exc:
        st.error(str(exc))
    else:
        st.success(f"Saved experiment {saved.id}: {saved.label}")
runs = lab.experiments.list()
if not runs:
    st.info("No experiments yet.")
    st.stop()
table = pd.DataFrame([{
    "id": e.id, "label": e.label, "model": e.model,
    "p99 ms": (e.client.get("all") or {}).get("p99_ms"), "throughput": (e.client.get("all") or {}).get("throughput_rps"),
    "avg batch": e.server.get("avg_batch"),
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
