"""The Experiments page's parts: the running study and A/B comparisons here; the sweep form, sweep results and
saved runs in their own modules (re-exported: the page takes every part from here)."""
from __future__ import annotations

import difflib

import pandas as pd
import streamlit as st

from app.config.errors import ConfigError
from app.experiments import charts, export, report
from app.experiments.ab import ABPlan, ABResult, Arm
from app.experiments.confidence import UNCLEAR
from app.experiments.store import DONE
from app.experiments.stored import read_ab, read_sweep
from app.experiments.sweep import operating_point
from app.lab import Lab
from app.metrics.catalog import fmt, label
from app.text_limits import MAX_LABEL_CHARS
from app.ui.access import can_operate, guarded
from app.ui.saved_runs import saved_runs  # noqa: F401 - the page takes every part from here
from app.ui.study_view import (delete_button, drawn_apart, duration as _duration, pick_study, problems_box,
                               readable_runs, resume_button, safe_data, status_box)
from app.ui.sweep_form import sweep_form  # noqa: F401
from app.ui.sweep_results import sweep_results  # noqa: F401
from app.ui.text import literal
from loadgen.limits import LIMITS
from loadgen.spec import LoadSpec, Mode, TrafficClass
from loadgen.specfile import spec_to_dict


_SEEN = "exp:job_seen"  # the job's state when the whole page was last drawn


def _job_mark(lab: Lab) -> tuple | None:
    """Return what of the job the rest of the page shows: which job, its study, whether it ended."""
    state = lab.jobs.state
    return None if state is None else (state.started, state.study_id, state.finished is not None)


def job_panel(lab: Lab) -> None:
    """The running (or last) sweep or comparison: progress, ETA, what it measures now, Cancel, how it ended.

    The panel redraws itself every second; when the job creates its study or ends, the whole page is drawn
    again, so the lists below never say "No sweeps yet" beside the sweep the panel shows.
    """
    st.session_state[_SEEN] = _job_mark(lab)
    _job_fragment(lab)


@st.fragment(run_every=1.0)
def _job_fragment(lab: Lab) -> None:
    if st.session_state.get(_SEEN) != _job_mark(lab):
        st.rerun()  # the whole page: its lists and results show what the job just did
    drawn_apart("The study job's panel", lambda: _job(lab))


def _job(lab: Lab) -> None:
    state = lab.jobs.state
    if state is None:
        return
    running = lab.jobs.running
    progress = state.progress
    if running:
        done, total = (progress.done, max(progress.total, 1)) if progress else (0, 1)
        eta = f", about {_duration(progress.eta_s)} left" if progress and progress.eta_s is not None else ""
        st.progress(min(1.0, done / total), text=f"{literal(state.label)}: {done} of ~{total}{eta}"
                    + (f" — now {literal(progress.current)}" if progress and progress.current else ""))
        if can_operate() and st.button("Cancel", key="exp:cancel"):
            lab.jobs.cancel()
    elif state.error:
        st.error(f"{literal(state.label)} failed: {literal(guarded(state.error))}")
    elif state.result is not None:
        result = state.result
        status_box(literal(state.label), getattr(result, "status", ""), getattr(result, "note", ""),
                   _duration(getattr(result, "wall_s", None)))
    if progress and progress.log:
        with st.expander("Log", expanded=running):
            st.text("\n".join(progress.log[-12:]))
    if running and state.kind == "sweep" and progress and progress.points:
        drawn_apart("The sweep's live chart", lambda: _live_chart(lab, progress))


def _live_chart(lab: Lab, progress) -> None:
    record = read_sweep(lab.experiments, lab.experiments.study(progress.study_id))
    if record.space is not None:
        st.altair_chart(charts.sweep_curves(progress.points, record.space), width="stretch")


# --- A/B ----------------------------------------------------------------------------------------------------
def _config_sources(lab: Lab, model: str) -> dict[str, str]:
    """Return name -> config text of the configs one can compare: now serving, sweep points, saved runs."""
    out = {"serving now": lab.config.current_text(model)}
    for study in lab.experiments.studies(kind="sweep", model=model)[:5]:
        record = read_sweep(lab.experiments, study)  # a sweep that cannot be read offers nothing, and breaks nothing
        if record.broken:
            continue
        best = operating_point(record.space, record.points)
        for p in record.points:
            if p.status == DONE and p.config_text:
                tag = " (recommended)" if best is not None and p.choice == best.choice else ""
                out.setdefault(f"sweep {study.id}: {p.choice.label}{tag}", p.config_text)
    for run in lab.experiments.list(model=model)[:20]:
        if not run.broken and run.config_text:
            out.setdefault(f"saved run {run.id}: {run.label}", run.config_text)
    return out


def ab_form(lab: Lab, models: list[str]) -> None:
    """Define a comparison and start it (drawn apart: an error in it leaves the rest of the page)."""
    drawn_apart("The comparison form", lambda: _ab_form(lab, models))


def _ab_form(lab: Lab, models: list[str]) -> None:
    model = st.selectbox("Model", models, index=models.index("gpu_sim") if "gpu_sim" in models else 0,
                         key="exp:ab_model")
    sources = _config_sources(lab, model)
    with st.form("exp:ab_form"):
        cols = st.columns(3)
        picks = [cols[i].selectbox(f"Configuration {'ABC'[i]}", ["—", *sources], index=min(i + 1, len(sources)) if i < 2
                                   else 0, key=f"exp:ab_arm{i}") for i in range(3)]
        c1, c2, c3, c4 = st.columns(4)
        mode = c1.radio("Traffic", ["open", "closed"], horizontal=True,
                        format_func=lambda m: "open loop (rate)" if m == "open" else "closed loop (concurrency)")
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
        use_running = st.checkbox("Use the traffic defined on the live pages instead (its classes, shapes, "
                                  "priorities; seeded as above)", value=False, disabled=lab.load.spec is None)
        go = st.form_submit_button("Start comparison", type="primary", disabled=lab.jobs.running)
    if not go:
        return
    chosen = [p for p in picks if p != "—"]
    try:
        if len(chosen) < 2:
            raise ValueError("pick at least two configurations")
        arms = tuple(Arm(f"{'ABC'[i]} ({p})"[:80], sources[p]) for i, p in enumerate(chosen))
        if use_running and lab.load.spec is not None:
            from dataclasses import replace

            spec = replace(lab.load.spec, seed=int(seed))
        elif mode == "open":
            spec = LoadSpec(mode=Mode.OPEN, rate=level, model=model, seed=int(seed), classes=(TrafficClass(sla_ms=sla),))
        else:
            spec = LoadSpec(mode=Mode.CLOSED, concurrency=int(level), model=model, seed=int(seed),
                            classes=(TrafficClass(sla_ms=sla),))
        plan = ABPlan(model, arms, spec_to_dict(spec), trials=int(trials), trial_s=float(trial_s),
                      warmup_s=float(warmup))
        lab.jobs.start_ab(plan, name)
    except (ValueError, RuntimeError, ConfigError) as exc:
        st.error(str(exc))
    else:
        st.success(f"Comparison started: {len(arms)} configurations × {int(trials)} trials, about "
                   f"{_duration(len(arms) * int(trials) * (trial_s + warmup + 2))}.")


def ab_results(lab: Lab) -> None:
    """Pick a comparison; show how it ended, each verdict with its intervals, the charts, and downloads — drawn
    apart, so a damaged comparison shows what is wrong and can still be deleted."""
    study = pick_study(lab, "ab", "Comparison")
    if study is None:
        return
    with st.container():
        drawn_apart(f"Comparison {study.id}", lambda: _comparison(lab, study))
    delete_button(lab, study.id, "comparison", "exp:del_ab")


def _comparison(lab: Lab, study) -> None:
    record = read_ab(lab.experiments, study)
    if record.broken:
        st.error(f"Comparison {study.id} cannot be read: {literal(guarded(record.broken))}. Delete it below (its "
                 "trials go with it).")
        return
    sid, plan = study.id, record.plan
    result = ABResult(sid, plan, record.trials, study.status, study.note)
    status_box(f"Comparison {sid}", study.status, study.note)
    problems_box("comparison", record.problems)
    st.caption(f"{literal(study.model)}: {' / '.join(literal(a.name) for a in plan.arms)}; {plan.trials} trials of "
               f"{plan.trial_s:g} s (+{plan.warmup_s:g} s warm-up) under the same seeded traffic, order alternating.")
    resume_button(lab, study, "runs only the trials not finished", lab.jobs.resume_ab)
    if result.trials:
        _, why = result.recommendation()
        st.markdown(f"**Recommended{'' if study.status == DONE else ' (from the trials so far)'}:** {literal(why)}")
    if caution := result.caution():
        st.warning(literal(caution))
    for arm in plan.arms[1:]:
        text = result.verdict(arm.name)
        (st.info if "no clear difference" in text else st.success)(literal(text))
        rows = [{"class": cls, "metric": label(d.key), plan.arms[0].name: fmt(d.key, d.a_mean, unit=False),
                 arm.name: fmt(d.key, d.b_mean, unit=False),
                 "difference": f"{d.relative:+.1%}" if d.relative is not None else "—",
                 "interval": (f"{d.relative_interval[0]:+.1%} to {d.relative_interval[1]:+.1%}"
                              if d.relative_interval else "—"),
                 "level": d.level_text, "verdict": d.verdict} for cls, d in result.differences(arm.name)]
        if rows:
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
            st.altair_chart(charts.ab_differences(result, arm.name), width="stretch")
        st.caption(f"A difference is called only when its interval excludes zero and it is at least "
                   f"{plan.min_effect:.0%}; '{UNCLEAR}' otherwise. {result.intervals_note()}")
    if result.trials:
        c1, c2 = st.columns(2)
        c1.altair_chart(charts.ab_trials(result), width="stretch")
        c2.altair_chart(charts.ab_timeline(result), width="stretch")
    base = plan.arms[0]
    for arm in plan.arms[1:]:
        diff = "".join(difflib.unified_diff(base.config_text.splitlines(True), arm.config_text.splitlines(True),
                                            base.name, arm.name))
        with st.expander(f"Config diff {literal(base.name)} → {literal(arm.name)}"):
            st.code(diff or "same config", language="diff")
    c1, c2 = st.columns(2)
    c1.download_button("HTML report", safe_data(lambda: report.ab_report(study, result), "The report"),
                       f"ab-{sid}.html", mime="text/html", key="exp:dl_ab_report")
    c2.download_button("CSV of every window", safe_data(lambda: export.windows_csv(readable_runs(lab, sid)), "The CSV"),
                       f"ab-{sid}-windows.csv", mime="text/csv", key="exp:dl_ab_csv")


