"""The traffic panel: start, stop and change the shared load generator."""
from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app.lab import Lab
from app.traffic import ARRIVALS, MIXES, RETRIES, TrafficForm, build_spec


def traffic_panel(lab: Lab, model: str, key: str, preset: TrafficForm) -> None:
    """Widgets for the load; one generator per server, shared by every page and session."""
    k = f"{key}:traffic"
    form = replace(preset, model=model)
    if form.sequences:
        form = replace(form, sequences=st.slider("Concurrent sequences", 1, 64, form.sequences, key=f"{k}:seqs"),
                       sequence_length=st.slider("Mean sequence length (steps)", 2, 100, form.sequence_length, key=f"{k}:len"))
    else:
        mode = st.radio("Load", ["closed", "open"], index=["closed", "open"].index(form.mode), horizontal=True, key=f"{k}:mode",
                        format_func=lambda m: {"closed": "closed loop (N in flight)", "open": "open loop (arrival rate)"}[m])
        form = replace(form, mode=mode)
        if mode == "closed":
            form = replace(form, concurrency=st.slider("Concurrency", 1, 64, form.concurrency, key=f"{k}:conc"))
        else:
            c1, c2 = st.columns(2)
            form = replace(form, rate=c1.number_input("Rate (req/s)", 1.0, 5000.0, float(form.rate), step=10.0, key=f"{k}:rate"),
                           arrival=c2.selectbox("Arrivals", ARRIVALS, index=ARRIVALS.index(form.arrival), key=f"{k}:arr"))
        c1, c2 = st.columns(2)
        form = replace(form, mix=c1.selectbox("Class mix", MIXES, index=MIXES.index(form.mix), key=f"{k}:mix"),
                       retry=c2.selectbox("Retries", RETRIES, index=RETRIES.index(form.retry), key=f"{k}:retry"))
    c1, c2, c3 = st.columns(3)
    form = replace(form, timeout_ms=c1.number_input("Client timeout ms", 10.0, 60000.0, float(form.timeout_ms), key=f"{k}:to"),
                   sla_ms=c2.number_input("SLA ms (goodput)", 1.0, 10000.0, float(form.sla_ms), key=f"{k}:sla"),
                   duration_s=c3.number_input("Stop after s", 5.0, 3600.0, float(form.duration_s), key=f"{k}:dur"))
    running = lab.load.running
    b1, b2, b3 = st.columns(3)
    if b1.button("Start traffic", type="primary", disabled=running, key=f"{k}:start", width="stretch"):
        _start(lab, form)
    if b2.button("Update live", disabled=not running, key=f"{k}:update", width="stretch",
                 help="change rate or concurrency of the running load"):
        lab.load.update(rate=form.rate if form.mode == "open" else None,
                        concurrency=form.concurrency if form.mode == "closed" else None)
    if b3.button("Stop traffic", disabled=not running, key=f"{k}:stop", width="stretch"):
        lab.load.stop()
        st.rerun()
    snap = lab.load.snapshot(window_s=1)
    if running:
        st.caption(f"Traffic running against `{getattr(snap.spec, 'model', '?')}` (shared by every page and viewer).")
    if snap.error:
        st.warning(f"The last traffic run stopped with an error: {snap.error}")


def _start(lab: Lab, form: TrafficForm) -> None:
    try:
        lab.load.start(build_spec(form))
    except (ValueError, RuntimeError) as exc:
        st.error(f"Traffic not started: {exc}")
        return
    lab.events.add(form.model, "traffic", f"traffic start ({form.mode})")
    st.rerun()
