"""The traffic panel: what is running now, and the form that starts, changes or stops the shared load."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import pandas as pd
import streamlit as st
from tritonclient.grpc.model_config_pb2 import ModelConfig

from loadgen.locust_source import LocustUnavailable, read_stats

from app.lab.ports import LabPort
from app.metrics.catalog import fmt, label
from app.traffic.form import (
    ARRIVALS,
    MIXES,
    RETRIES,
    TrafficForm,
    build_spec,
    class_targets,
    form_from_spec,
    input_rows,
    keep_up_warning,
    load_targets,
    plays_trace,
    problems,
    served,
)
from app.diagnosis.patterns import FAILING_SHARE, percent
from app.ui.access import can_operate, guarded
from app.ui.traffic.failures import failed_cell, failure_lines
from app.ui.live.live_frame import cache_of
from app.ui.text import literal
from app.ui.traffic.trace_form import trace_form
from app.ui.demo.viewers import viewers
from loadgen.report import describe_load
from loadgen.stats import ALL


def traffic_panel(lab: LabPort, model: str, key: str, preset: TrafficForm, config: ModelConfig | None = None) -> None:
    """Widgets for the load; one generator per server, shared by every page and session (config: the model's served
    one, for its inputs)."""
    snap = lab.traffic_snapshot(window_s=0)
    running = lab.traffic().running
    if not can_operate():
        traffic_status(lab, running)
        return
    k = f"{key}:traffic"
    runs = lab.traffic().runs
    fk = f"{k}:{runs}"  # a new run (from any page or session) redraws the form from its spec
    here = running and snap.spec is not None and model in load_targets(snap.spec)
    start = form_from_spec(snap.spec, replace(preset, model=model)) if here else replace(preset, model=model)
    form = _form(start, fk, config)
    wrong = problems(form, config)
    for problem in wrong:
        st.error(f"Not accepted: {problem}.")
    b1, b2, b3 = st.columns(3)
    if b1.button("Start traffic", type="primary", disabled=running or bool(wrong), key=f"{k}:start", width="stretch"):
        _start(lab, form, config)
    if b2.button("Update live", disabled=not running or bool(wrong), key=f"{k}:update", width="stretch",
                 help="change rate or concurrency of the running load"):
        lab.update_traffic(rate=form.rate if form.mode == "open" else None,
                           concurrency=form.concurrency if form.mode == "closed" else None)
        st.rerun()
    if b3.button("Stop traffic", disabled=not running, key=f"{k}:stop", width="stretch"):
        lab.stop_traffic()
        st.rerun()
    traffic_status(lab, running, drawn_runs=runs)


def _form(form: TrafficForm, k: str, config: ModelConfig | None = None) -> TrafficForm:
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
        arrival = c2.selectbox("Arrivals", ARRIVALS, index=ARRIVALS.index(form.arrival), key=f"{k}:arr",
                               format_func=lambda a: "rate trace" if a == "rate_trace" else a)
        form = replace(form, arrival=arrival)
        if arrival == "rate_trace":
            form = trace_form(form, k)
        else:
            form = replace(form, rate=c1.number_input("Rate (req/s)", value=float(form.rate), step=10.0,
                                                      key=f"{k}:rate"))
    c1, c2 = st.columns(2)
    form = replace(form, mix=c1.selectbox("Class mix", MIXES, index=MIXES.index(form.mix), key=f"{k}:mix"),
                   retry=c2.selectbox("Retries", RETRIES, index=RETRIES.index(form.retry), key=f"{k}:retry"))
    form = _inputs_form(form, f"{k}:{form.model}", config)
    return replace(form, **_common(form, k, traced=plays_trace(form)))


def _inputs_form(form: TrafficForm, k: str, config: ModelConfig | None) -> TrafficForm:
    """The Inputs expander: each served input, a shape for those with a -1, a send box for optional ones, data."""
    with st.expander("Inputs", expanded=bool(form.shapes or form.send or form.data)):
        data = st.text_input("Input data: a perf_analyzer JSON file or a folder of .npy files (empty: random values)",
                             value=form.data, key=f"{k}:data", placeholder="/path/to/inputs.json")
        if config is None:
            st.caption("The model's served inputs are not known here: random values in its served shapes.")
            return replace(form, data=data)
        shapes, send, typed = [], [], dict(form.shapes)
        if data.strip():
            st.caption("The data gives every tensor and its shape.")
        for t in served(config).inputs if not data.strip() else ():
            if -1 in t.dims:
                text = st.text_input(f"Shape of {t.name} {list(t.dims)}, without batch", value=typed.get(t.name, ""),
                                     key=f"{k}:shape:{t.name}", help="a -1 left empty is sent as 1",
                                     placeholder=",".join("1" if d == -1 else str(d) for d in t.dims))
                shapes += [(t.name, text)] if text.strip() else []
            if t.optional and st.checkbox(f"Send the optional input {t.name}", value=t.name in form.send,
                                          key=f"{k}:send:{t.name}"):
                send.append(t.name)
        form = replace(form, shapes=tuple(shapes), send=tuple(send), data=data)
        st.dataframe(pd.DataFrame(input_rows(form, config)), hide_index=True, width="stretch")
        st.caption("sends: each request's tensor, its batch dimension first when the model batches.")
    return form


def _common(form: TrafficForm, k: str, traced: bool = False) -> dict:
    c1, c2, c3 = st.columns(3)
    return {"timeout_ms": c1.number_input("Client timeout ms", value=float(form.timeout_ms), key=f"{k}:to"),
            "sla_ms": c2.number_input("SLA ms (goodput)", value=float(form.sla_ms), key=f"{k}:sla"),
            "duration_s": c3.number_input("Stop after s", value=float(form.duration_s), key=f"{k}:dur", disabled=traced,
                                          help="a rate trace plays once: it stops after its played span" if traced
                                          else None)}


def traffic_status(lab: LabPort, drawn_running: bool, controls: bool = True, drawn_runs: int | None = None) -> None:
    """What runs now, refreshed; the page redraws when a run starts or ends by itself, or (drawn_runs: the run the
    form was drawn from) another run took its place once no job is running (controls: the reset)."""
    _status(lab, drawn_running, controls, drawn_runs)


STATUS_S = 10  # the status table's window


def redraw_needed(drawn_running: bool, drawn_runs: int | None, running: bool, runs: int,
                  job_running: Callable[[], bool]) -> bool:
    """Return whether the page must be drawn again for its buttons and form to follow the traffic: a run ended or
    started by itself, or another run took the place of the one the form was drawn from once no job is running (a
    probe's levels ran and the traffic before them runs again: the form kept the last level's 1 in flight,
    2026-12-07; while a job runs, each of its runs would redraw the page)."""
    if running != drawn_running:
        return True
    return drawn_runs is not None and runs != drawn_runs and not job_running()


@st.fragment(run_every=3.0)
def _status(lab: LabPort, drawn_running: bool, controls: bool = True, drawn_runs: int | None = None) -> None:
    if lab.server_facts().locust_url:
        locust_status(lab.server_facts().locust_url)
    snap = lab.traffic_snapshot(window_s=0)
    traffic = lab.traffic()
    if redraw_needed(drawn_running, drawn_runs, traffic.running, traffic.runs, lab.job_running):
        st.rerun(scope="app")
    if snap.spec is None:
        st.caption("No traffic has run yet.")
        return
    now = time.time()
    window = cache_of(lab).get(("traffic-status", lab.traffic().running, lab.traffic().runs), now,
                               lambda: lab.traffic_window(now - STATUS_S, now))  # once per tick for every session
    everything = window.get(ALL) or {}
    failed = int(everything.get("failed") or 0)
    since = time.strftime("%H:%M:%S", time.localtime(snap.started_at)) if snap.started_at else "?"
    state = "**Running**" if snap.running else "Last run (ended)"
    share = everything.get("failed_share")
    failing = snap.running and share is not None and share >= FAILING_SHARE
    if failing:  # running, and failing: never a calm blue box
        state = f"**Running — {percent(share)} of requests failing**"
    pid = lab.traffic().worker_pid if controls and can_operate() else None  # process ids are for the operator (not /demo)
    source = f"the built-in generator (its own process, PID {pid})" if pid else "the built-in generator"
    (st.warning if failing else st.info)(
        f"{state} against `{snap.spec.model}` since {since} ({snap.elapsed_s:,.0f} s): "
        f"{describe_load(snap.spec)}, from {source}. Shared by every page and viewer.")
    if snap.error:
        st.warning(f"The last traffic run stopped with an error: {literal(snap.error)}")
    warning = keep_up_warning(snap.spec, window, started_at=snap.started_at) if snap.running else None
    if warning:
        st.warning(warning)
    rows = status_rows(snap.spec, window, snap.summary, snap.started_at)
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        st.caption(f"Per class over the last {STATUS_S} s (whole seconds); send lateness over the run.")
    if failed:  # the failures in their own words, and what the server counted over the same window
        targets = sorted(load_targets(snap.spec))
        server = cache_of(lab).get(("traffic-status-server", lab.traffic().runs, *targets), now,
                                   lambda: {m: lab.measure(m, now - STATUS_S, now).server for m in targets})
        st.warning("  \n".join(failure_lines(everything, server, STATUS_S)))
    watching = viewers()
    if controls and watching:
        st.caption(f":material/visibility: {watching} demo viewer{'s' if watching > 1 else ''} connected (/demo)")
    if controls and snap.running and can_operate() and st.button(
            "Reset statistics", key="traffic:reset", help="start the client statistics again from now (marked)"):
        lab.reset_traffic_stats()


def status_rows(spec, window: dict, summary: dict, started_at: float | None = None) -> list[dict]:
    """Return one row per class: target and offered rate, answers, percentiles with their sample count (a rate
    trace's target: what it asked over the window's span, from the run's start)."""
    span = (window.get(ALL) or {}).get("span")
    targets = class_targets(spec, tuple(span) if span else None, started_at)
    out = []
    for cls in [c.name for c in spec.classes] + [s.name for s in spec.sequences]:
        row = window.get(cls) or {}
        seconds = row.get("seconds") or 0
        late = ((summary.get(cls) or {}).get("lateness_ms") or {}).get("p99")
        target = targets.get(cls)
        out.append({
            "class": cls,
            "target": f"{target:,.0f} req/s" if target is not None
            else (f"concurrency {spec.concurrency}" if cls in targets else "—"),
            label("offered_rps"): fmt("offered_rps", row.get("offered_rps"), unit=False) if seconds else "—",
            label("throughput_rps"): fmt("throughput_rps", row.get("throughput_rps"), unit=False) if seconds else "—",
            **{label(k): fmt(k, row.get(k), unit=False) for k in ("p50_ms", "p95_ms", "p99_ms")},
            "n": f"{row.get('latency_n') or 0:,}",
            label("failed_share"): failed_cell(row),
            label("rejected"): row.get("rejected") or 0, label("timeouts"): row.get("timeouts") or 0,
            label("late"): row.get("late") or 0,
            label("behind"): row.get("behind") or 0,
            "send lateness p99 (ms)": "—" if late is None else f"{late:,.2f}",
        })
        if row.get("responses"):  # a decoupled model: its answers stream back
            out[-1].update({label(k): fmt(k, row.get(k), unit=False) for k in STREAMED})
    if any(label(STREAMED[0]) in r for r in out):  # one set of columns for every row
        out = [{**r, **{label(k): r.get(label(k), "—") for k in STREAMED}} for r in out]
    return out


STREAMED = ("responses_rps", "first_p50_ms", "first_p99_ms", "gap_p50_ms", "gap_p99_ms")  # decoupled models


def _start(lab: LabPort, form: TrafficForm, config: ModelConfig | None = None) -> None:
    try:
        lab.start_traffic(build_spec(form, config))
    except (ValueError, RuntimeError) as exc:
        st.error(f"Traffic not started: {exc}")
        return
    st.rerun()


def locust_status(url: str) -> None:
    """Which generator drives: a Locust master's workers (its stats API), next to the built-in one."""
    try:
        stats = read_stats(url)
    except LocustUnavailable as exc:
        st.warning(f"Driving: Locust master at {guarded(url)} — {guarded(exc)}")
        return
    st.info(f"**Driving: Locust** master at {guarded(stats.url)} — {stats.state}, {stats.users} users on {stats.workers} "
            f"worker{'s' if stats.workers != 1 else ''}, {stats.rps:,.0f} req/s, {stats.failures:,} failed of "
            f"{stats.requests:,}. The built-in generator's runs are below.")
    if stats.classes:
        st.dataframe(pd.DataFrame(stats.classes), hide_index=True, width="stretch")
