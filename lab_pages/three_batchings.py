"""The three batchings: which scheduler fits which model, checked on the live server."""
import pandas as pd
import streamlit as st

from app.config.batching_fit import check
from app.ui.page import concepts
from app.ui.page.layout import header, lab_or_stop
from app.ui.live.live_view import live_view
from app.ui.panels.scenario_panel import scenario_panel
from app.ui.traffic.traffic_panel import traffic_status

lab = lab_or_stop()
header("The three batchings", concepts.THREE, expanded=True)
st.subheader("Each loaded model, checked")
rows = []
for model in [m.name for m in lab.status().models if m.state == "READY"]:
    try:
        fit = check(model, lab.served_config(model))
    except Exception as exc:  # noqa: BLE001 - one unreadable model must not hide the others
        st.warning(f"{model}: {exc}")
        continue
    rows.append({"model": model, "model is": fit.described, "scheduler": fit.batching,
                 "fits": "yes" if fit.ok else "NO", "verdict": fit.verdict})
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
st.markdown(
    "Try it: on **Sequence batching**, switch `stream_acc` to dynamic batching and watch `wrong_output` climb; "
    "switch back (or Undo) and it stops. In-flight batching belongs to an LLM backend (TensorRT-LLM, vLLM) on a GPU "
    "server; here `token_sim`, a decoupled Python model on the simulated device (a labelled cost model), does it "
    "inside the model so it can be compared with request-level dynamic batching on the same server — run the "
    "scenario below: the tokens stream over Triton's HTTP `generate_stream` endpoint. The lab's traffic drives "
    "any decoupled model over Triton's gRPC stream, with its responses/s, time to first response and time between "
    "responses."
)
scenario_panel(lab, "three")
traffic_status(lab, lab.traffic().running)
model = st.selectbox("Live view of", [r["model"] for r in rows] or ["gpu_sim"], key="three:model")
live_view(lab, model, "three")
