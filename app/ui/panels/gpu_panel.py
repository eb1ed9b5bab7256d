"""The GPU panel: utilization, memory and power per GPU, memory per instance, and whether one more fits.

Shown only when the server reports GPUs (Triton's nv_gpu_* gauges); a CPU server shows nothing.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.lab.ports import LabPort

GIB = 2**30


@st.fragment(run_every=2.0)
def gpu_panel(lab: LabPort, model: str) -> None:
    """Per-GPU figures; on the instance page, the memory each instance of the model takes."""
    view = lab.gpu_view(model)
    if view is None:  # a CPU server, or a down one (the status line shows that)
        return
    st.subheader("GPUs")
    st.dataframe(pd.DataFrame([{
        "GPU": i, "uuid": g.uuid, "utilization": _pct(g.utilization),
        "memory used (GiB)": _gib(g.memory_used), "memory total (GiB)": _gib(g.memory_total),
        "power (W)": g.power_w, "power limit (W)": g.power_limit_w} for i, g in enumerate(view.gpus)]),
        hide_index=True, width="stretch")
    if view.per_instance is None:
        st.caption(f"Memory per instance: change the instance count once and it is measured ({view.instances} now, "
                   f"{view.used / GIB:.2f} GiB used on all GPUs).")
        return
    st.caption(f"Memory per instance of {model}: about {view.per_instance / GIB:.2f} GiB (slope over instance counts "
               f"{', '.join(map(str, view.counts_seen))}).")
    if view.warning:
        st.warning(view.warning)


def _gib(value: float | None) -> float | None:
    return None if value is None else round(value / GIB, 2)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"
