"""The Experiments page's parts: the running study, sweeps, A/B comparisons and saved runs."""
from __future__ import annotations

import difflib
import json
import time

import pandas as pd
import streamlit as st

from app.config.errors import ConfigError, clean
from app.config.model_config import parse_config
from app.experiments import charts, export, report
from app.experiments.ab import ABPlan, ABResult, Arm, load_trials
from app.experiments.compare import compare
from app.experiments.confidence import UNCLEAR
from app.experiments.driving import Start
from app.experiments.model_analyzer import ma_config_yaml
from app.experiments.space import CONCURRENCY, RATE, SearchSpace
from app.experiments.store import DONE, RUNNING
from app.experiments.sweep import load_points, operating_point
from app.knobs import DELAYS_US, MAX_INSTANCES, SIZES
from app.lab import Lab
from app.metrics.catalog import fmt, label
from app.ui.access import can_operate
from app.text_limits import MAX_LABEL_CHARS
from app.traffic import sent_behind
from app.ui.text import literal
from loadgen.limits import LIMITS
from loadgen.spec import LoadSpec, Mode, TrafficClass
from loadgen.specfile import spec_to_dict


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "—"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.1f} min"


@st.fragment(run_every=1.0)
def job_panel(lab: Lab) -> None:
    """The running (or last) sweep or comparison: progress, ETA, what it measures now, Cancel."""
    state = lab.jobs.state
    if state is None:
        return
    running = lab.jobs.running
    progress = state.progress
    if running:
        done, total = (progress.done, max(progress.total, 1)) if progress else (0, 1)
        eta = f", about {_duration(progress.eta_s)} left" if progress and progress.eta_s is not None else ""
        st.progress(min(1.0, done / total), text=f"{literal(state.label)}: {done} of ~{total}{eta}"
                    + (f" — now {progress.current}" if progress and progress.current else ""))
        if can_operate() and st.button("Cancel", key="exp:cancel"):
            lab.jobs.cancel()
    elif state.error:
        st.error(f"{literal(state.label)} failed: {literal(state.error)}")
    elif state.result is not None:
        st.success(f"{literal(state.label)}: {state.result.status} in {_duration(state.result.wall_s)}"
                   + (f" — {literal(state.result.note)}" if state.result.note else ""))
    if progress and progress.log:
        with st.expander("Log", expanded=running):
            st.text("\n".join(progress.log[-12:]))
    if running and state.kind == "sweep" and progress and progress.points:
        study = lab.experiments.study(progress.study_id)
        space = SearchSpace.from_dict(study.definition["space"])
        st.altair_chart(charts.sweep_curves(progress.points, space), width="stretch")


# --- sweeps -------------------------------------------------------------------------------------------------
def _numbers(text: str, kind=float) -> tuple:
    parts = [p for p in text.replace(";", ",").split(",") if p.strip()]
    return tuple(kind(p.strip()) for p in parts)


def sweep_form(lab: Lab, models: list[str]) -> None:
    """Define a sweep and start it."""
    with st.form("exp:sweep_form"):
        c1, c2, c3 = st.columns(3)
        model = c1.selectbox("Model", models, index=models.index("gpu_sim") if "gpu_sim" in models else 0)
        instances = c2.multiselect("Instance counts", list(range(1, MAX_INSTANCES + 1)), default=[1, 2])
        delays = c3.multiselect("max_queue_delay (µs)", list(DELAYS_US), default=[0, 2000])
        c4, c5, c6 = st.columns(3)
        batches = c4.multiselect("max_batch_size (empty: keep)", list(SIZES), default=[])
        preferred = c5.text_input("Preferred batch sizes (sets separated by ';', e.g. 4,8; 8,16; empty: keep)", "",
                                  max_chars=MAX_LABEL_CHARS)
        default = c6.checkbox("Also the config serving now (default)", value=True)
        c7, c8, c9 = st.columns(3)
        kind = c7.radio("Load", [CONCURRENCY, RATE], horizontal=True,
                        format_func=lambda k: "closed loop: concurrency" if k == CONCURRENCY else "open loop: rate (req/s)")
        loads = c8.text_input("Load levels", "1, 2, 4, 8, 16", max_chars=MAX_LABEL_CHARS)
        budget = c9.number_input("p99 budget (ms)", min_value=0.1, max_value=float(LIMITS["sla_ms"].high), value=40.0,
                                 step=5.0)
        c10, c11, c12 = st.columns(3)
        floor = c10.number_input("Minimum throughput (req/s, 0: none)", min_value=0.0, value=0.0, step=50.0)
        adaptive = c11.radio("Search", ["adaptive", "grid"], horizontal=True,
                             help="Adaptive: per configuration, only the loads needed to find its highest load inside "
                                  "the SLA, and configurations that cannot beat the best are dropped. Grid: every point.")
        name = c12.text_input("Sweep label", placeholder="e.g. instances × delay", max_chars=MAX_LABEL_CHARS)
        go = st.form_submit_button("Start sweep", type="primary", disabled=lab.jobs.running)
    if not go:
        return
    try:
        pref_sets = tuple(_numbers(s, int) for s in preferred.split(";") if s.strip())
        space = SearchSpace(model=model, instances=tuple(instances), delays_us=tuple(delays),
                            max_batch_sizes=tuple(batches), preferred=pref_sets, include_default=default,
                            load_kind=kind, loads=_numbers(loads), p99_budget_ms=float(budget),
                            min_throughput_rps=float(floor) or None, adaptive=adaptive == "adaptive")
        lab.jobs.start_sweep(space, name)
    except (ValueError, RuntimeError) as exc:
        st.error(str(exc))
    else:
        st.success(f"Sweep started: {len(space.choices())} configurations × {len(space.loads)} loads "
                   f"(at most {space.points()} points).")


def _pick_study(lab: Lab, kind: str, name: str):
    """Select box of the stored studies of a kind, newest first; None (said so) when there are none."""
    studies = lab.experiments.studies(kind=kind)
    if not studies:
        st.info(f"No {name.lower()}s yet.")
        return None
    names = {s.id: f"{s.id}: {s.label} — {s.status}, {_when(s.created_at)}" for s in studies}
    sid = st.selectbox(name, list(names), format_func=names.get, key=f"exp:{kind}_pick")
    return lab.experiments.study(sid)


def _resume_button(lab: Lab, study, text: str, resume) -> None:
    """Offer Resume for a study that stopped before it finished."""
    if study.status in (DONE, RUNNING) or not can_operate():
        return
    if st.button(f"Resume ({text})", key=f"exp:resume_{study.kind}", disabled=lab.jobs.running):
        resume(study.id)
        st.rerun()


def sweep_results(lab: Lab) -> None:
    """Pick a sweep; show its operating point, curves, Pareto set, points, and what can be done with them."""
    study = _pick_study(lab, "sweep", "Sweep")
    if study is None:
        return
    sid = study.id
    space = SearchSpace.from_dict(study.definition["space"])
    points = load_points(lab.experiments, sid)
    st.caption(f"{study.model}: p99 budget {space.p99_budget_ms:g} ms"
               + (f", at least {space.min_throughput_rps:g} req/s" if space.min_throughput_rps else "")
               + f"; {space.load_kind} {', '.join(f'{v:g}' for v in space.loads)}; "
               + ("adaptive" if space.adaptive else "grid") + f" search. Status: {study.status}"
               + (f" — {literal(study.note)}" if study.note else ""))
    _resume_button(lab, study, "measures only the points not finished", lab.jobs.resume_sweep)
    best = operating_point(space, points)
    if best is None:
        st.warning("No measured point is inside the SLA yet." if points else "No point measured yet.")
    else:
        st.success(f"**SLA operating point: {best.choice.label} at {best.load:g} "
                   f"{'in flight' if space.load_kind == CONCURRENCY else 'req/s'}** — goodput "
                   f"{fmt('goodput_rps', best.goodput)}, throughput {fmt('throughput_rps', best.throughput)}, "
                   f"p99 {fmt('p99_ms', best.p99)} (budget {space.p99_budget_ms:g} ms)"
                   + (f"; {caution}" if (caution := best.caution()) else ""))
    if points:
        st.altair_chart(charts.sweep_curves(points, space), width="stretch")
        c1, c2 = st.columns(2)
        c1.altair_chart(charts.sweep_by_load(points, space), width="stretch")
        c2.altair_chart(charts.pareto_chart(points, space), width="stretch")
        table = pd.DataFrame([{
            "configuration": p.choice.label, "load": p.load, "status": p.status,
            label("throughput_rps"): fmt("throughput_rps", p.throughput, unit=False),
            label("goodput_rps"): fmt("goodput_rps", p.goodput, unit=False),
            label("p99_ms"): fmt("p99_ms", p.p99, unit=False),
            label("avg_batch"): fmt("avg_batch", p.get("avg_batch"), unit=False),
            label("queue_share"): fmt("queue_share", p.get("queue_share"), unit=False),
            "inside SLA": space.meets_sla(p.p99, p.throughput), "settled": p.stable,
            "generator behind": "" if p.behind is None else sent_behind(p.behind),
            "note": p.note,
        } for p in points])
        st.dataframe(table, hide_index=True, width="stretch")
    for line in study.result.get("skipped", []):
        st.caption(f"Not measured: {line}")
    _sweep_actions(lab, study, space, points, best)


def _sweep_actions(lab: Lab, study, space: SearchSpace, points, best) -> None:
    done = [p for p in points if p.status == DONE]
    if best is not None and can_operate():
        if st.button(f"Apply the recommended config ({best.choice.label})", key="exp:apply_best", type="primary",
                     disabled=lab.jobs.running):
            try:
                result = lab.apply(space.model, best.choice.config(parse_config(Start.of(study).served)),
                                   f"sweep {study.id}: recommended {best.choice.label}", confirm_contract=True)
            except ConfigError as exc:
                st.error(clean(str(exc)))
            else:
                st.success(result.message)
    c1, c2, c3, c4 = st.columns(4)
    if best is not None:
        c1.download_button("Recommended config.pbtxt", best.config_text or "", export.config_file_name(best),
                           key="exp:dl_best")
    c2.download_button("HTML report", lambda: report.sweep_report(study, points, space), f"sweep-{study.id}.html",
                       mime="text/html", key="exp:dl_sweep_report")
    c3.download_button("CSV of every window", lambda: export.windows_csv(lab.experiments.list(study_id=study.id)),
                       f"sweep-{study.id}-windows.csv",
                       mime="text/csv", key="exp:dl_sweep_csv")
    try:
        ma_yaml = ma_config_yaml(space, "model_repository", "output_model_repository", "model_analyzer_results")
    except ValueError as exc:  # e.g. a fractional rate: Model Analyzer takes whole numbers only
        c4.caption(f"No Model Analyzer YAML: {exc}")
    else:
        c4.download_button("Model Analyzer YAML", ma_yaml, f"sweep-{study.id}-model-analyzer.yaml", key="exp:dl_ma")
    if done:
        keys = {p.key: f"{p.choice.label} @ {p.load:g}" for p in done}
        pick = st.selectbox("A point", list(keys), format_func=keys.get,
                            index=list(keys).index(best.key) if best is not None and best.key in keys else 0,
                            key="exp:point_pick")
        point = next(p for p in done if p.key == pick)
        st.markdown("perf_analyzer command that reproduces this point:")
        st.code(export.shell_line(export.perf_analyzer_command(lab.endpoint.host_port, space.model, space.load_kind,
                                                               point.load, space.p99_budget_ms)), language="bash")
        st.download_button("This point's config.pbtxt", point.config_text, export.config_file_name(point),
                           key="exp:dl_point")
    if can_operate() and st.button("Delete this sweep", key="exp:del_sweep", disabled=lab.jobs.running):
        lab.experiments.delete_study(study.id)
        st.rerun()


# --- A/B ----------------------------------------------------------------------------------------------------
def _config_sources(lab: Lab, model: str) -> dict[str, str]:
    """Return name -> config text of the configs one can compare: now serving, sweep points, saved runs."""
    out = {"serving now": lab.config.current_text(model)}
    for study in lab.experiments.studies(kind="sweep", model=model)[:5]:
        space = SearchSpace.from_dict(study.definition["space"])
        points = load_points(lab.experiments, study.id)
        best = operating_point(space, points)
        for p in points:
            if p.status == DONE and p.config_text:
                tag = " (recommended)" if best is not None and p.choice == best.choice else ""
                out.setdefault(f"sweep {study.id}: {p.choice.label}{tag}", p.config_text)
    for run in lab.experiments.list(model=model)[:20]:
        out.setdefault(f"saved run {run.id}: {run.label}", run.config_text)
    return out


def ab_form(lab: Lab, models: list[str]) -> None:
    """Define a comparison and start it."""
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
    """Pick a comparison; show each verdict with its intervals, the charts, and downloads."""
    study = _pick_study(lab, "ab", "Comparison")
    if study is None:
        return
    sid = study.id
    plan = ABPlan.from_dict(study.definition["plan"])
    result = ABResult(sid, plan, load_trials(lab.experiments, sid), study.status, study.note)
    st.caption(f"{study.model}: {' / '.join(literal(a.name) for a in plan.arms)}; {plan.trials} trials of "
               f"{plan.trial_s:g} s (+{plan.warmup_s:g} s warm-up) under the same seeded traffic, order alternating. "
               f"Status: {study.status}" + (f" — {literal(study.note)}" if study.note else ""))
    _resume_button(lab, study, "runs only the trials not finished", lab.jobs.resume_ab)
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
    c1, c2, c3 = st.columns(3)
    c1.download_button("HTML report", lambda: report.ab_report(study, result), f"ab-{sid}.html", mime="text/html",
                       key="exp:dl_ab_report")
    c2.download_button("CSV of every window", lambda: export.windows_csv(lab.experiments.list(study_id=sid)),
                       f"ab-{sid}-windows.csv", mime="text/csv", key="exp:dl_ab_csv")
    if can_operate() and c3.button("Delete this comparison", key="exp:del_ab", disabled=lab.jobs.running):
        lab.experiments.delete_study(sid)
        st.rerun()


# --- saved runs ---------------------------------------------------------------------------------------------
def saved_runs(lab: Lab) -> None:
    """Save the current run; list, relabel, delete, export saved runs; show two side by side."""
    if can_operate():
        c1, c2 = st.columns([3, 1])
        name = c1.text_input("Label for the current run", placeholder="e.g. delay 2000 µs, 2 instances",
                             key="exp:label", max_chars=MAX_LABEL_CHARS)
        if c2.button("Save current run", type="primary", key="exp:save", width="stretch"):
            try:
                saved = lab.save_experiment(name)
            except ValueError as exc:
                st.error(str(exc))
            else:
                st.success(f"Saved run {saved.id}: {literal(saved.label)} ({saved.outcome.get('window', '')})")
    runs = lab.experiments.list()
    if not runs:
        st.info("No saved runs yet.")
        return
    table = pd.DataFrame([{
        "id": e.id, "label": e.label, "model": e.model,
        "window": f"{_when(e.started_at)} + {e.ended_at - e.started_at:,.0f} s" if e.started_at and e.ended_at else "—",
        "seed": e.seed, label("p99_ms"): fmt("p99_ms", (e.client.get("all") or {}).get("p99_ms"), unit=False),
        "n": (e.client.get("all") or {}).get("latency_n"),
        label("throughput_rps"): fmt("throughput_rps", (e.client.get("all") or {}).get("throughput_rps"), unit=False),
        label("avg_batch"): fmt("avg_batch", e.server.get("avg_batch"), unit=False),
        "reloads left out": len(e.reloads),
    } for e in runs])
    st.dataframe(table, hide_index=True, width="stretch")
    ids = [e.id for e in runs]
    names = {e.id: f"{e.id}: {e.label}" for e in runs}
    pick = st.selectbox("Run", ids, format_func=names.get, key="exp:run_pick")
    run = lab.experiments.get(pick)
    c1, c2, c3, c4 = st.columns(4)
    c1.download_button("Run as JSON", json.dumps(run.__dict__, default=str, indent=1), f"run-{pick}.json",
                       mime="application/json", key="exp:dl_run")
    c2.download_button("CSV of its seconds", export.windows_csv([run]), f"run-{pick}.csv", mime="text/csv",
                       key="exp:dl_run_csv")
    if can_operate():
        new = c3.text_input("New label", key="exp:relabel_text", label_visibility="collapsed", placeholder="new label",
                            max_chars=MAX_LABEL_CHARS)
        if c3.button("Relabel", key="exp:relabel") and new.strip():
            try:
                lab.experiments.relabel(pick, new)
            except ValueError as exc:  # a label over MAX_LABEL_CHARS sent around the widget
                st.error(str(exc))
            else:
                st.rerun()
        if c4.button("Delete run", key="exp:delete_run"):
            lab.experiments.delete(pick)
            st.rerun()
    if len(runs) < 2:
        return
    a_col, b_col = st.columns(2)
    a_id = a_col.selectbox("A", ids, index=min(1, len(ids) - 1), format_func=names.get, key="exp:a")
    b_id = b_col.selectbox("B", ids, index=0, format_func=names.get, key="exp:b")
    a, b = lab.experiments.get(a_id), lab.experiments.get(b_id)
    st.subheader(f"A: {literal(a.label)}  vs  B: {literal(b.label)}")
    st.caption("Two single runs show how the figures changed but not whether the change is more than noise: "
               "for a verdict, compare the configs in an A/B comparison (repeated, interleaved trials).")
    st.dataframe(pd.DataFrame(compare(a, b)), hide_index=True, width="stretch")
    diff = "".join(difflib.unified_diff(a.config_text.splitlines(True), b.config_text.splitlines(True), "A", "B"))
    with st.expander("Config diff A → B", expanded=bool(diff)):
        st.code(diff or "same config", language="diff")
