"""The traffic form's rate trace: a shipped trace, a rate file, or a history imported from Prometheus; compress,
scale, and what the trace plays in words."""
from __future__ import annotations

import time
from dataclasses import replace

import streamlit as st

from app.paths import state_dir
from app.traffic.form import TRACE_PROCESSES, TrafficForm, form_trace_text, import_prometheus, trace_problem, with_trace_rate
from app.ui.text import literal
from loadgen.rate_trace.rate_trace import TraceError
from loadgen.rate_trace.shipped import NAMES
from loadgen.rate_trace.wall_clock import trace_classes

SOURCES = ("shipped", "file", "Prometheus")
TRACES_DIR = "traces"  # under the lab's state dir: the histories imported from Prometheus
TOTAL = "(all classes: the total)"
DEFAULT_QUERY = 'sum(rate(nv_inference_request_success{model="MODEL"}[1m]))'


def trace_form(form: TrafficForm, k: str) -> TrafficForm:
    """The rate trace's widgets; return the form with its trace, compress, scale, class and rate (= played mean)."""
    start = "shipped" if form.trace in NAMES else "file"
    source = st.radio("Trace", SOURCES, index=SOURCES.index(start), horizontal=True, key=f"{k}:tsrc",
                      format_func=lambda s: {"shipped": "shipped with the lab", "file": "a rate file",
                                             "Prometheus": "import from Prometheus"}[s])
    if source == "shipped":
        trace = st.selectbox("Shipped trace", NAMES, index=NAMES.index(form.trace) if form.trace in NAMES else 1,
                             key=f"{k}:tname", help="loadgen/traces/README.md describes each")
    elif source == "file":
        trace = st.text_input("Rate file: CSV t,rate[,class], JSON, or perf_analyzer request intervals",
                              value="" if form.trace in NAMES else form.trace, key=f"{k}:tpath",
                              placeholder="/path/to/rates.csv")
    else:
        trace = _prometheus(form, k)
    names = trace_classes(trace) if trace.strip() else ()
    cls = ""
    if names:
        chosen = st.selectbox("Class of the trace", (TOTAL, *names),
                              index=(names.index(form.trace_class) + 1) if form.trace_class in names else 0,
                              key=f"{k}:tclass")
        cls = "" if chosen == TOTAL else chosen
    c1, c2, c3 = st.columns(3)
    form = replace(
        form, trace=trace, trace_class=cls,
        compress=c1.number_input("Compress (recorded s per played s)", value=float(form.compress), step=1.0,
                                 key=f"{k}:tcomp", help="144 plays a day in 10 min; rates are kept"),
        scale=c2.number_input("Scale (rate ×)", value=float(form.scale), step=0.1, key=f"{k}:tscale",
                              help="multiplies every rate; the shape stays"),
        trace_process=c3.selectbox("Arrivals inside each step", TRACE_PROCESSES,
                                   index=TRACE_PROCESSES.index(form.trace_process)
                                   if form.trace_process in TRACE_PROCESSES else 0, key=f"{k}:tproc"))
    form = with_trace_rate(form)
    if trace_problem(form) is None:  # a problem is said once, with the form's others
        st.caption(f"{form_trace_text(form)} Rate (the played mean): **{form.rate:,.1f} req/s**; the run lasts the "
                   "played span, and Update live changes the scale from where the trace is.")
    return form


def _prometheus(form: TrafficForm, k: str) -> str:
    """The Prometheus import: URL, PromQL, range and step; return the path of the imported trace ('' before)."""
    now = time.time()
    c1, c2 = st.columns([2, 3])
    url = c1.text_input("Prometheus URL", value="http://localhost:9090", key=f"{k}:purl")
    query = c2.text_input("PromQL (a rate)", value=DEFAULT_QUERY.replace("MODEL", form.model), key=f"{k}:pq")
    c1, c2, c3 = st.columns(3)
    start = c1.text_input("Start (ISO-8601 or unix s)", value=_iso(now - 3600), key=f"{k}:pstart")
    end = c2.text_input("End", value=_iso(now), key=f"{k}:pend")
    step = c3.text_input("Step", value="60s", key=f"{k}:pstep")
    imported = f"{k}:pimported"
    if st.button("Import", key=f"{k}:pimport"):
        try:
            path, trace = import_prometheus(url, query, start, end, step, state_dir() / TRACES_DIR)
        except (TraceError, ValueError, OSError) as exc:
            st.error(f"Not imported: {literal(str(exc))}")
        else:
            st.session_state[imported] = str(path)
            st.success(f"Imported {len(trace.rates):,} steps, saved as {path}.")
    path = st.session_state.get(imported, "")
    if path:
        st.caption(f"Playing the imported trace {path}.")
    return path or (form.trace if form.trace not in NAMES else "")


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
