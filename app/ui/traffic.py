"""The traffic panel: what is running now, and the form that starts, changes or stops the shared load."""
from __future__ import annotations

import time
from dataclasses import replace

import streamlit as st

from app.lab import Lab
from app.ui.access import can_operate
from app.traffic import (ARRIVALS, MIXES, RETRIES, TrafficForm, build_spec, form_from_spec, load_targets,
                         problems)
from loadgen.report import describe_load


def traffic_panel(lab: Lab, model: str, key: str, preset: TrafficForm) -> None:
    """Widgets for the load; one generator per server, shared by every page and session."""
    snap = lab.load.snapshot(window_s=0)
    running = lab.load.running
    if not can_operate():
        traffic_status(lab, running)
        return
    k = f"{key}:traffic"
    fk = f"{k}:{lab.load.runs}"  # a new run (from any page or session) redraws the form from its spec
    here = running and snap.spec is not None and model in load_targets(snap.spec)
    start = form_from_spec(snap.spec, replace(preset, model=model)) if here else replace(preset, model=model)
    form = _form(start, fk)
    wrong = problems(form)
    for problem in wrong:
        st.error(f"Not accepted: {problem}.")
    b1, b2, b3 = st.columns(3)
    if b1.button("Start traffic", type="primary", disabled=running or bool(wrong), key=f"{k}:start", width="stretch"):
        _start(lab, form)
    if b2.button("Update live", disabled=not running or bool(wrong), key=f"{k}:update", width="stretch",
                 help="change rate or concurrency of the running load"):
        lab.update_traffic(rate=form.rate if form.mode == "open" else None,
                           concurrency=form.concurrency if form.mode == "closed" else None)
        st.rerun()
    if b3.button("Stop traffic", disabled=not running, key=f"{k}:stop", width="stretch"):
        lab.stop_traffic()
        st.rerun()
    traffic_status(lab, running)


def _form(form: TrafficForm, k: str) -> TrafficForm:
    if form.sequences:
        return replace(
            form, sequences=st.slider("Concurrent sequences", 1, max(64, form.sequences), form.sequences, key=f"{k}:seqs"),
            sequence_length=st.slider("Mean sequence length (steps)", 2, max(100, form.sequence_length),
                                      form.sequence_length, key=f"{k}:len"),
            **_common(form, k))
    mode = st.radio("Load", ["closed", "open"], index=["closed", "open"].index(form.mode), horizontal=True,
                    key=f"{k}:mode",
                    format_func=lambda m: {"closed": "closed loop (N in flight)", "open": "open loop (arrival rate)"}[m])
    form = replace(form, mode=mode)
    if mode == "closed":
        form = replace(form, concurrency=st.slider("Concurrency", 1, max(64, form.concurrency), form.concurrency,
                                                   key=f"{k}:conc"))
    else:
        c1, c2 = st.columns(2)
        form = replace(form, rate=c1.number_input("Rate (req/s)", value=float(form.rate), step=10.0, key=f"{k}:rate"),
                       arrival=c2.selectbox("Arrivals", ARRIVALS, index=ARRIVALS.index(form.arrival), key=f"{k}:arr"))
    c1, c2 = st.columns(2)
    form = replace(form, mix=c1.selectbox("Class mix", MIXES, index=MIXES.index(form.mix), key=f"{k}:mix"),
                   retry=c2.selectbox("Retries", RETRIES, index=RETRIES.index(form.retry), key=f"{k}:retry"))
    return replace(form, **_common(form, k))


def _common(form: TrafficForm, k: str) -> dict:
    c1, c2, c3 = st.columns(3)
    return {"timeout_ms": c1.number_input("Client timeout ms", value=float(form.timeout_ms), key=f"{k}:to"),
            "sla_ms": c2.number_input("SLA ms (goodput)", value=float(form.sla_ms), key=f"{k}:sla"),
            "duration_s": c3.number_input("Stop after s", value=float(form.duration_s), key=f"{k}:dur")}


def traffic_status(lab: Lab, drawn_running: bool) -> None:
    """What runs now, refreshed; the page redraws when a run starts or ends by itself."""
    _status(lab, drawn_running)


@st.fragment(run_every=2.0)
def _status(lab: Lab, drawn_running: bool) -> None:
    snap = lab.load.snapshot(window_s=0)
    if lab.load.running != drawn_running:
        st.rerun(scope="app")  # buttons and form follow a run that ended (or started elsewhere)
    if snap.spec is None:
        st.caption("No traffic has run yet.")
        return
    since = time.strftime("%H:%M:%S", time.localtime(snap.started_at)) if snap.started_at else "?"
    classes = ", ".join(f"{c.name} (priority {c.priority or 'default'})" for c in snap.spec.classes) or \
        ", ".join(f"{s.count} sequences of {s.model}" for s in snap.spec.sequences)
    state = "**Running**" if snap.running else "Last run (ended)"
    st.info(f"{state} against `{snap.spec.model}` since {since} ({snap.elapsed_s:,.0f} s): "
            f"{describe_load(snap.spec)} · classes: {classes}. Shared by every page and viewer.")
    if snap.error:
        st.warning(f"The last traffic run stopped with an error: {snap.error}")


def _start(lab: Lab, form: TrafficForm) -> None:
    try:
        lab.start_traffic(build_spec(form))
    except (ValueError, RuntimeError) as exc:
        st.error(f"Traffic not started: {exc}")
        return
    st.rerun()
