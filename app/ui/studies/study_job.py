"""The Experiments page's parts: the running study and the A/B form here; the A/B form's configurations, A/B
results, the sweep form, sweep results and saved runs in their own modules (re-exported: the page takes every part
from here)."""
from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app.config.errors import ConfigError
from app.experiments.report import study_charts as charts
from app.experiments.ab.comparison import ABPlan
from app.experiments.stored import read_sweep
from app.lab.ports import LabPort
from app.text_limits import MAX_LABEL_CHARS
from app.ui.studies.ab_arms import MODEL_KEY, define_arms
from app.ui.studies.ab_results import ab_results  # noqa: F401 - the page takes every part from here
from app.ui.access import can_operate, guarded
from app.ui.studies.saved_runs import saved_runs  # noqa: F401
from app.ui.studies.study_view import show_chart, drawn_apart, seconds_text, status_box
from app.ui.studies.sweep_form import sweep_form  # noqa: F401
from app.ui.studies.sweep_results import sweep_results  # noqa: F401
from app.ui.text import literal
from loadgen.limits import LIMITS
from loadgen.rate_trace.trace_load import played_s, trace_load
from loadgen.rate_trace.shipped import NAMES
from loadgen.spec import LoadSpec, Mode, TrafficClass
from loadgen.specfile import spec_to_dict
from app.experiments.ab.comparison import ab_job


TRAFFIC_WORDS = {"open": "open loop (rate)", "closed": "closed loop (concurrency)",
                 "trace": "a rate trace (whole trace per trial)"}
_SEEN = "exp:job_seen"  # the job's state when the whole page was last drawn


def _job_mark(lab: LabPort) -> tuple | None:
    """Return what of the job the rest of the page shows: which job, its study, whether it ended."""
    state = lab.job()
    return None if state is None else (state.started, state.study_id, state.finished is not None)


def job_panel(lab: LabPort) -> None:
    """The running (or last) sweep or comparison: progress, ETA, what it measures now, Cancel, how it ended.

    The panel redraws itself every second; when the job creates its study or ends, the whole page is drawn
    again, so the lists below never say "No sweeps yet" beside the sweep the panel shows.
    """
    st.session_state[_SEEN] = _job_mark(lab)
    _job_fragment(lab)


@st.fragment(run_every=1.0)
def _job_fragment(lab: LabPort) -> None:
    if st.session_state.get(_SEEN) != _job_mark(lab):
        st.rerun()  # the whole page: its lists and results show what the job just did
    drawn_apart("The study job's panel", lambda: _job(lab))


def _job(lab: LabPort) -> None:
    state = lab.job()
    if state is None:
        return
    running = lab.job_running()
    progress = state.progress
    if running:
        done, total = (progress.done, max(progress.total, 1)) if progress else (0, 1)
        eta = f", about {seconds_text(progress.eta_s)} left" if progress and progress.eta_s is not None else ""
        st.progress(min(1.0, done / total), text=f"{literal(state.label)}: {done} of ~{total}{eta}"
                    + (f" — now {literal(progress.current)}" if progress and progress.current else ""))
        if can_operate() and st.button("Cancel", key="exp:cancel"):
            lab.cancel_job()
    elif state.error:
        st.error(f"{literal(state.label)} failed: {literal(guarded(state.error))}")
    elif state.result is not None:
        result = state.result
        status_box(literal(state.label), getattr(result, "status", ""), getattr(result, "note", ""),
                   seconds_text(getattr(result, "wall_s", None)))
    if progress and progress.log:
        with st.expander("Log", expanded=running):
            st.text("\n".join(progress.log[-12:]))
    if running and state.kind == "sweep" and progress and progress.points:
        drawn_apart("The sweep's live chart", lambda: _live_chart(lab, progress))


def _live_chart(lab: LabPort, progress) -> None:
    record = read_sweep(lab, lab.study(progress.study_id))
    if record.space is not None:
        show_chart(charts.sweep_curves(progress.points, record.space))


# --- A/B ----------------------------------------------------------------------------------------------------
def ab_form(lab: LabPort, models: list[str]) -> None:
    """Define a comparison and start it (drawn apart: an error in it leaves the rest of the page)."""
    drawn_apart("The comparison form", lambda: _ab_form(lab, models))


def _ab_form(lab: LabPort, models: list[str]) -> None:
    if st.session_state.get(MODEL_KEY) not in (None, *models):
        st.session_state.pop(MODEL_KEY)  # a model no longer ready
    held = MODEL_KEY in st.session_state  # a sweep handed its model over (or it was chosen before)
    model = st.selectbox("Model", models, key=MODEL_KEY, index=0 if held else (
        models.index("gpu_sim") if "gpu_sim" in models else 0))
    st.caption("Each configuration starts from the config the model serves now: keep it, set its knobs, paste a "
               "config.pbtxt, or take one a sweep measured or a run saved. A is the baseline.")
    arms = define_arms(lab, model)
    with st.form("exp:ab_form"):
        c1, c2, c3, c4 = st.columns(4)
        mode = c1.radio("Traffic", ["open", "closed", "trace"], horizontal=True, format_func=TRAFFIC_WORDS.get)
        level = c2.number_input("Rate (req/s) or concurrency", min_value=1.0, max_value=float(LIMITS["rate"].high),
                                value=100.0, step=10.0)
        sla = c3.number_input("SLA for goodput (ms)", min_value=1.0, max_value=float(LIMITS["sla_ms"].high), value=50.0,
                              step=5.0)
        seed = c4.number_input("Seed (same arrivals for every arm)", min_value=0, value=1, step=1)
        c5, c6, c7, c8 = st.columns(4)
        trials = c5.number_input("Trials", min_value=int(LIMITS["trials"].low), max_value=int(LIMITS["trials"].high),
                                 value=4)
        trial_s = c6.number_input("Seconds measured per trial", min_value=float(LIMITS["trial_s"].low),
                                  max_value=float(LIMITS["trial_s"].high), value=5.0, step=1.0)
        warmup = c7.number_input("Warm-up per trial (s)", min_value=0.0,
                                 max_value=float(LIMITS["trial_warmup_s"].high), value=1.0, step=0.5)
        name = c8.text_input("Comparison label", placeholder="e.g. delay 0 vs 2000", max_chars=MAX_LABEL_CHARS)
        t1, t2, t3 = st.columns(3)
        trace = t1.selectbox("Trace (traffic: a rate trace)", NAMES, help="Each trial plays the whole trace once "
                             "per configuration (the seconds and warm-up above do not apply), judged on the trace: "
                             "the cheapest configuration that holds the SLA through it. loadgen/traces/README.md "
                             "describes the shipped ones; the traffic panel plays your own files.")
        compress = t2.number_input("Trace compress (recorded s per played s)", min_value=0.01,
                                   max_value=float(LIMITS["trace_speed"].high), value=30.0, step=1.0)
        scale = t3.number_input("Trace scale (rate multiplier)", min_value=0.01, value=1.0, step=0.1)
        use_running = st.checkbox("Use the traffic defined on the live pages instead (its classes, shapes, "
                                  "priorities; seeded as above)", value=False, disabled=lab.traffic().spec is None)
        go = st.form_submit_button("Start comparison", type="primary", disabled=lab.job_running() or arms is None)
    if not go:
        return
    try:
        if arms is None or len(arms) < 2:
            raise ValueError("define at least two configurations (A and B)")
        if use_running and lab.traffic().spec is not None:
            spec = replace(lab.traffic().spec, seed=int(seed))
        elif mode == "trace":
            spec = trace_load(LoadSpec(mode=Mode.OPEN, rate=1.0, model=model, seed=int(seed),
                                       classes=(TrafficClass(sla_ms=sla),)), trace, float(compress), float(scale))
        elif mode == "open":
            spec = LoadSpec(mode=Mode.OPEN, rate=level, model=model, seed=int(seed),
                            classes=(TrafficClass(sla_ms=sla),))
        else:
            spec = LoadSpec(mode=Mode.CLOSED, concurrency=int(level), model=model, seed=int(seed),
                            classes=(TrafficClass(sla_ms=sla),))
        plan = ABPlan(model, tuple(arms), spec_to_dict(spec), trials=int(trials), trial_s=float(trial_s),
                      warmup_s=float(warmup))
        lab.start_job(ab_job(lab, plan, name))
    except (ValueError, RuntimeError, ConfigError) as exc:
        st.error(literal(exc))
    else:
        each = played_s(spec.arrival) + 2 if plan.trace else trial_s + warmup + 2
        st.success(f"Comparison started: {len(arms)} configurations × {int(trials)} trials"
                   + (f", each playing {literal(spec.arrival.rate_trace)} once" if plan.trace else "")
                   + f", about {seconds_text(len(arms) * int(trials) * each)}.")
