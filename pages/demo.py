"""Demo: the operator's live lab, read-only and larger, for an audience (open /demo)."""
import time

import streamlit as st

from app.diagnosis import where_time_goes
from app.diagnosis_window import window_from
from app.config.read import settings_of
from app.lab import Lab
from app.ui.layout import lab_or_stop
from app.ui.live import live_view, p99_text
from app.ui.live_frame import narration_figures
from app.ui.text import literal
from app.ui.traffic import traffic_status
from app.ui.viewers import register_viewer

lab = lab_or_stop(prompt=False)
spec = lab.load.spec
model = spec.model if spec is not None else "gpu_sim"
st.title("Triton Batching Lab — live")
st.caption(f"Read-only view of the operator's lab: **{literal(model)}**. It follows every change the operator makes.")


@st.fragment(run_every=2.0)
def narration(lab: Lab, model: str) -> None:
    """What just changed, and what the last 20 s say."""
    register_viewer()
    now = time.time()
    markers = lab.markers.list(model, now - 600)
    if markers:
        m = markers[-1]
        st.markdown(f"**Latest: #{m.id} {literal(m.text)}** at {time.strftime('%H:%M:%S', time.localtime(m.t))}"
                    + (" — reload under way" if m.band and m.end is None else ""))
    figures = narration_figures(lab, model)  # shared by every viewer in the same second
    try:
        sentence = where_time_goes(window_from(figures, settings_of(lab.config.current(model))))
    except Exception:  # noqa: BLE001 - the narration is a caption, never a crash
        sentence = None
    st.markdown(f"client p99 {p99_text(figures)}" + (f" · {sentence}" if sentence else ""))


narration(lab, model)
traffic_status(lab, lab.load.running, controls=False)
live_view(lab, model, "demo", per_class=True, controls=False)
