"""The traffic panel: what is running now, and the form that starts, changes or stops the shared load."""
from __future__ import annotations

import time
from dataclasses import replace

import pandas as pd
import streamlit as st

from loadgen.locust_source import LocustUnavailable, read_stats

from app.lab import Lab
from app.metrics.catalog import fmt, label
from app.traffic import (
    ARRIVALS,
    MIXES,
    RETRIES,
    TrafficForm,
    build_spec,
    class_targets,
    form_from_spec,
    keep_up_warning,
    load_targets,
    problems,
)
from app.ui.access import can_operate
from app.ui.live_frame import cache_of
from app.ui.viewers import viewers
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


def traffic_status(lab: Lab, drawn_running: bool, controls: bool = True) -> None:
    """What runs now, refreshed; the page redraws when a run starts or ends by itself (controls: the reset)."""
    _status(lab, drawn_running, controls)


STATUS_S = 10  # the status table's window


@st.fragment(run_every=3.0)
def _status(lab: Lab, drawn_running: bool, controls: bool = True) -> None:
    if lab.locust_url:
        locust_status(lab.locust_url)
    snap = lab.load.snapshot(window_s=0)
    if lab.load.running != drawn_running:
        st.rerun(scope="app")  # buttons and form follow a run that ended (or started elsewhere)
    if snap.spec is None:
        st.caption("No traffic has run yet.")
        return
    since = time.strftime("%H:%M:%S", time.localtime(snap.started_at)) if snap.started_at else "?"
    state = "**Running**" if snap.running else "Last run (ended)"
    pid = lab.load.worker.pid
    source = f"the built-in generator (its own process, PID {pid})" if pid else "the built-in generator"
    st.info(f"{state} against `{snap.spec.model}` since {since} ({snap.elapsed_s:,.0f} s): "
            f"{describe_load(snap.spec)}, from {source}. Shared by every page and viewer.")
    if snap.error:
        st.warning(f"The last traffic run stopped with an error: {snap.error}")
    now = time.time()
    window = cache_of(lab).get(("traffic-status", lab.load.running, lab.load.runs), now,
                               lambda: lab.load.window(now - STATUS_S, now))  # once per tick for every session
    warning = keep_up_warning(snap.spec, window) if snap.running else None
    if warning:
        st.warning(warning)
    rows = status_rows(snap.spec, window, snap.summary)
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        st.caption(f"Per class over the last {STATUS_S} s (whole seconds); send lateness over the run.")
    watching = viewers()
    if controls and watching:
        st.caption(f"👁 {watching} demo viewer{'s' if watching > 1 else ''} connected (/demo)")
    if controls and snap.running and can_operate() and st.button(
            "Reset statistics", key="traffic:reset", help="start the client statistics again from now (marked)"):
        lab.reset_traffic_stats()


def status_rows(spec, window: dict, summary: dict) -> list[dict]:
    """Return one row per class: target and offered rate, answers, percentiles with their sample count."""
    targets = class_targets(spec)
    out = []
    for cls in [c.name for c in spec.classes] + [s.name for s in spec.sequences]:
        row = window.get(cls) or {}
        seconds = row.get("seconds") or 0
        late = ((summary.get(cls) or {}).get("lateness_ms") or {}).get("p99")
        target = targets.get(cls)
        out.append({
            "class": cls,
            "target": f"{target:,.0f} req/s" if target else (f"concurrency {spec.concurrency}" if cls in targets else "—"),
            label("offered_rps"): fmt("offered_rps", row.get("offered_rps"), unit=False) if seconds else "—",
            label("throughput_rps"): fmt("throughput_rps", row.get("throughput_rps"), unit=False) if seconds else "—",
            **{label(k): fmt(k, row.get(k), unit=False) for k in ("p50_ms", "p95_ms", "p99_ms")},
            "n": f"{row.get('latency_n') or 0:,}",
            label("rejected"): row.get("rejected") or 0, label("timeouts"): row.get("timeouts") or 0,
            label("late"): row.get("late") or 0,
            label("behind"): row.get("behind") or 0,
            "send lateness p99 (ms)": "—" if late is None else f"{late:,.2f}",
        })
    return out


def _start(lab: Lab, form: TrafficForm) -> None:
    try:
        lab.start_traffic(build_spec(form))
    except (ValueError, RuntimeError) as exc:
        st.error(f"Traffic not started: {exc}")
        return
    st.rerun()


def locust_status(url: str) -> None:
    """Which generator drives: a Locust master's workers (its stats API), next to the built-in one."""
    try:
        stats = read_stats(url)
    except LocustUnavailable as exc:
        st.warning(f"Driving: Locust master at {url} — {exc}")
        return
    st.info(f"**Driving: Locust** master at {stats.url} — {stats.state}, {stats.users} users on {stats.workers} "
            f"worker{'s' if stats.workers != 1 else ''}, {stats.rps:,.0f} req/s, {stats.failures:,} failed of "
            f"{stats.requests:,}. The built-in generator's runs are below.")
    if stats.classes:
        st.dataframe(pd.DataFrame(stats.classes), hide_index=True, width="stretch")
