"""The GPU panel: utilization, memory and power per GPU, memory per instance, and whether one more fits.

Shown only when the server reports GPUs (Triton's nv_gpu_* gauges); a CPU server shows nothing.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.config.read import settings_of
from app.lab import Lab
from app.metrics.gpu import gpus_of, memory_per_instance, next_instance_fits
from app.metrics.scrape import fetch_text

GIB = 2**30


@st.fragment(run_every=2.0)
def gpu_panel(lab: Lab, model: str) -> None:
    """Per-GPU figures; on the instance page, the memory each instance of the model takes."""
    try:
        gpus = gpus_of(fetch_text(lab.endpoint.metrics_url))
    except OSError:
        return  # a down server is shown by the status line, not here
    if not gpus:
        return
    st.subheader("GPUs")
    st.dataframe(pd.DataFrame([{
        "GPU": i, "uuid": g.uuid, "utilization": _pct(g.utilization),
        "memory used (GiB)": _gib(g.memory_used), "memory total (GiB)": _gib(g.memory_total),
        "power (W)": g.power_w, "power limit (W)": g.power_limit_w} for i, g in enumerate(gpus)]),
        hide_index=True, width="stretch")
    settings = settings_of(lab.config.current(model))
    count = sum(g.count for g in settings.instance_groups) or 1
    devices = tuple(d for g in settings.instance_groups for d in g.gpus)
    used = sum(g.memory_used or 0.0 for g in gpus)
    seen = lab.gpu_memory.setdefault(model, {})
    if not lab.markers.reloading(model):  # memory settles once the instances are loaded
        seen[count] = used
    per = memory_per_instance(seen)
    if per is None:
        st.caption(f"Memory per instance: change the instance count once and it is measured ({count} now, "
                   f"{used / GIB:.2f} GiB used on all GPUs).")
        return
    st.caption(f"Memory per instance of {model}: about {per / GIB:.2f} GiB (slope over instance counts "
               f"{', '.join(map(str, sorted(seen)))}).")
    warning = next_instance_fits(gpus, per, devices)
    if warning:
        st.warning(warning)


def _gib(value: float | None) -> float | None:
    return None if value is None else round(value / GIB, 2)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"
