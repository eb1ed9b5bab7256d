"""The Experiments page's trace-judged sweep: a form (which trace — shipped or an uploaded rate file — compress, scale,
the SLA, instances × delays) and each stored sweep's configurations with their trace figures and the recommendation."""
from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from app.store.database import DONE, RUNNING
from app.experiments.trace.judge import TOLERANCE
from app.experiments.trace.trace_output import run_row, trace_sweep_html
from app.experiments.trace.play import TraceLoad
from app.experiments.trace.trace_sweep import KIND, TraceSweepPlan, TraceSweepResult, load_runs, pick_of, verdict_of
from app.config.knobs import DELAYS_US, MAX_INSTANCES
from app.lab.ports import LabPort
from app.paths import state_dir
from app.text_limits import MAX_LABEL_CHARS
from app.ui.access import guarded
from app.ui.studies.study_view import cannot_read, problems_box, resume_button, status_box, study_results
from app.ui.text import literal
from loadgen.limits import LIMITS
from loadgen.rate_trace.shipped import NAMES
from app.experiments.trace.trace_sweep import resumed_trace_sweep_job, trace_sweep_job

UPLOAD = "a rate file (upload)"


def trace_sweep_form(lab: LabPort, models: list[str]) -> None:
    """Define a trace-judged sweep and start it."""
    with st.form("exp:trace_form"):
        c1, c2, c3, c4 = st.columns(4)
        model = c1.selectbox("Model", models, index=models.index("gpu_sim") if "gpu_sim" in models else 0)
        source = c2.selectbox("Trace", [*NAMES, UPLOAD], help="loadgen/traces/README.md describes the shipped ones")
        compress = c3.number_input("Compress (recorded s per played s)", min_value=0.01,
                                   max_value=float(LIMITS["trace_speed"].high), value=144.0, step=1.0)
        scale = c4.number_input("Scale (rate multiplier)", min_value=0.01, value=1.0, step=0.1)
        upload = st.file_uploader("Rate file (CSV t,rate; JSON; perf_analyzer intervals)", type=["csv", "json", "txt"])
        c5, c6, c7, c8 = st.columns(4)
        instances = c5.multiselect("Instance counts to play", list(range(1, MAX_INSTANCES + 1)), default=[1, 2, 3])
        delays = c6.multiselect("max_queue_delay (µs, empty: keep)", list(DELAYS_US), default=[])
        sla = c7.number_input("SLA: p99 (ms)", min_value=0.1, max_value=float(LIMITS["sla_ms"].high), value=50.0)
        tolerance = c8.number_input("Seconds over the SLA that still hold it (share)", min_value=0.0, max_value=1.0,
                                    value=TOLERANCE, step=0.01, format="%.2f")
        c9, c10 = st.columns(2)
        seed = c9.number_input("Seed (the same arrivals for every configuration)", min_value=0, value=1, step=1)
        name = c10.text_input("Trace sweep label", max_chars=MAX_LABEL_CHARS)
        go = st.form_submit_button("Start trace-judged sweep", type="primary", disabled=lab.job_running())
    if not go:
        return
    try:
        trace = source if source != UPLOAD else _saved(upload)
        plan = TraceSweepPlan(model, TraceLoad(trace, float(compress), float(scale)), float(sla), tuple(instances),
                              tuple(delays), seed=int(seed), tolerance=float(tolerance))
        lab.start_job(trace_sweep_job(lab, plan, name))
    except (ValueError, RuntimeError) as exc:
        st.error(literal(guarded(exc)))
    else:
        st.success(f"Trace-judged sweep started: {len(plan.space().choices())} configurations, each playing "
                   f"{literal(plan.load.describe())} once ({plan.spec().duration_s:,.0f} s).")


def _saved(upload) -> str:
    """Keep an uploaded rate file in the lab's state folder (named by its content); return its path."""
    if upload is None:
        raise ValueError("choose a rate file to upload, or a shipped trace")
    data = upload.getvalue()
    folder = state_dir() / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    suffix = "." + upload.name.rsplit(".", 1)[-1].lower() if "." in upload.name else ".csv"
    path = folder / f"{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    path.write_bytes(data)
    return str(path)


def trace_sweep_results(lab: LabPort) -> None:
    """Pick a stored trace-judged sweep; show its configurations' trace figures and the recommendation."""
    study_results(lab, KIND, "Trace-judged sweep", "sweep", "exp:del_trace", _draw)


def _draw(lab: LabPort, study) -> None:
    try:
        plan = TraceSweepPlan.from_dict(study.definition["plan"])
    except Exception as exc:  # noqa: BLE001 - any shape of damage: say it, offer Delete
        cannot_read("Trace-judged sweep", study.id, f"its plan cannot be read ({exc})", "runs")
        return
    problems: list[str] = []
    runs = load_runs(lab, study.id, problems)
    status_box(f"Trace-judged sweep {study.id}", study.status, study.note)
    problems_box("sweep", problems)
    st.caption(f"{literal(study.model)}: {literal(plan.load.describe())}, SLA p99 {plan.sla_ms:g} ms, "
               f"seed {plan.seed}; "
               f"a configuration holds with at most {plan.tolerance:.0%} of its played seconds over the SLA.")
    resume_button(lab, study, "plays only the configurations not played yet", resumed_trace_sweep_job)
    verdict = verdict_of(runs, plan.tolerance)
    pick = pick_of(runs, verdict)
    if pick is not None:
        box = st.success if verdict.holds else st.warning
        box(f"**Recommended: {literal(pick.choice.label)}** — {literal(verdict.reason)}")
    elif study.status == RUNNING:
        st.info("No configuration played yet.")
    if runs:
        holds = set(verdict.holds)
        table = pd.DataFrame([_row(r, r.choice.label in holds) for r in runs])
        st.dataframe(table, hide_index=True, width="stretch")
    if pick is not None and study.status == DONE and pick.config_text:
        st.download_button("Recommended config.pbtxt", pick.config_text, f"{study.model}-trace-{study.id}.pbtxt",
                           key="exp:dl_trace_pick")
    if runs:
        wall = (study.ended_at or study.created_at) - study.created_at
        page = trace_sweep_html(TraceSweepResult(study.id, plan, runs, study.status, wall, study.note, verdict))
        st.download_button("HTML report", page, f"{study.model}-trace-sweep-{study.id}.html", mime="text/html",
                           key="exp:dl_trace_report")


def _row(run, holds: bool) -> dict:
    r = run_row(run, holds)
    fmt = lambda v, p="{:,.1f}": "—" if v is None else p.format(v)  # noqa: E731
    return {"configuration": r["configuration"], "goodput (req/s)": fmt(r.get("goodput_rps")),
            "worst-minute p99 (ms)": fmt(r.get("worst_minute_p99_ms")),
            "seconds over SLA": "—" if "seconds" not in r else f"{r['seconds_over_sla']} of {r['seconds']}",
            "instance-seconds": fmt(r.get("instance_seconds"), "{:,.0f}"), "holds the SLA": holds,
            "sent": r.get("sent"), "failed": r.get("failed"), "note": r["note"]}
