"""The sweep tab's results: how a stored sweep ended, its recommendation, curves, points and downloads — each sweep
drawn apart, so one that cannot be read shows what is wrong and can still be deleted.

Every figure shown (operating point, charts, table, report) comes from the points with their repeats pooled in
(sweep.with_repeats), the figures the recommendation rests on. The recommendation is green only when it is clear
(or the only configuration inside the SLA); otherwise it is a warning, the Apply button says it is not confirmed, and
the runner-up can be applied instead or both compared in an A/B (the form is filled in with them)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.config.errors import ConfigError, clean
from app.config.model_config import parse_config
from app.experiments.report import study_charts as charts, export, html_report as report
from app.experiments.driving import Start
from app.experiments.sweep.model_analyzer import ma_config_yaml
from app.experiments.sweep.space import CONCURRENCY, SearchSpace
from app.experiments.sweep.twin_rank import ranking_error
from app.store.database import DONE, FAILED, RUNNING
from app.experiments.sweep.recommend import CLEAR, ONLY, Recommendation, recommend
from app.experiments.stored import read_sweep, refusals
from app.experiments.sweep.sweeper import Point, with_repeats
from app.lab.ports import LabPort
from app.metrics.catalog import fmt, label
from loadgen.behind import sent_behind
from app.ui.studies.ab_arms import prefill
from app.ui.access import can_operate, guarded
from app.ui.studies.study_view import (cannot_read, problems_box, readable_runs, resume_button, safe_data,
    show_chart, status_box, study_results)
from app.ui.text import literal
from app.experiments.sweep.sweeper import resumed_sweep_job


def sweep_results(lab: LabPort) -> None:
    """Pick a sweep; show how it ended, its operating point, curves, Pareto set, points, and what can be done with
    them — drawn apart, so a damaged sweep shows what is wrong and can still be deleted."""
    study_results(lab, "sweep", "Sweep", "sweep", "exp:del_sweep", _sweep)


def _sweep(lab: LabPort, study) -> None:
    record = read_sweep(lab, study)
    if cannot_read("Sweep", study.id, record.broken, "points"):
        return
    space = record.space
    problems = list(record.problems)
    points = with_repeats(lab, study.id, record.points, problems)  # what the recommendation rests on
    status_box(f"Sweep {study.id}", study.status, study.note)
    problems_box("sweep", problems)
    st.caption(f"{literal(study.model)}: p99 budget {space.p99_budget_ms:g} ms"
               + (f" (on its edge within {space.p99_headroom:.0%})" if space.p99_headroom else "")
               + (f", at least {space.min_throughput_rps:g} req/s" if space.min_throughput_rps else "")
               + f"; {space.load_kind} {', '.join(f'{v:g}' for v in space.loads)}; "
               + ("adaptive" if space.adaptive else "grid") + " search"
               + ("; ranked by the twin: each configuration it chose is measured from the load it predicted best, "
                  "the others not at all." if (study.definition.get("options") or {}).get("twin_top") else "."))
    resume_button(lab, study, "measures only the points not finished", resumed_sweep_job)
    refused = refusals(points)
    if refused and study.status != FAILED:  # a failed sweep's box above gives the reasons already
        st.warning(f"{len(refused)} configuration{'s' if len(refused) > 1 else ''} could not be applied — the "
                   "server refused " + ("them" if len(refused) > 1 else "it") + ": "
                   + "; ".join(literal(guarded(r)) for r in refused))
    advice = recommend(space, points)
    measured = [p for p in points if p.status == DONE]
    if advice is None and measured:
        st.warning("No measured point is inside the SLA" + (" yet." if study.status == RUNNING else "."))
    elif advice is None and study.status == RUNNING:
        st.info("No point measured yet.")
    elif advice is not None:
        _recommendation(space, advice)
    if measured:
        for chart in (charts.sweep_curves(points, space), charts.sweep_by_load(points, space),
                      charts.pareto_chart(points, space)):
            show_chart(chart)  # one a row: side by side, two panels hid a third
    if points:
        st.dataframe(_point_table(points, space), hide_index=True, width="stretch")
    ranked = (study.result or {}).get("twin") or []
    if ranked:
        _twin_table(ranked, space)
    for line in record.skipped:
        st.caption(f"Not measured: {literal(line)}")
    _sweep_actions(lab, study, space, points, advice)


def _twin_table(ranked: list[dict], space: SearchSpace) -> None:
    """The twin's ranking beside what the sweep measured of the configurations it chose: how far off it was where it
    was checked is what a reader needs to trust it where it was not."""
    unit = "in flight" if space.load_kind == CONCURRENCY else "req/s"
    rows = []
    for place, r in enumerate(ranked, 1):
        predicted, measured = r.get("predicted_goodput_rps"), r.get("measured_goodput_rps")
        rows.append({
            "#": place, "configuration": r.get("label", r.get("choice", "")),
            f"predicted load ({unit})": "none inside" if r.get("load") is None else f"{r['load']:g}",
            "predicted goodput (req/s)": fmt("goodput_rps", predicted, unit=False) if r.get("load") is not None
            else "—",
            f"measured load ({unit})": (f"{r['measured_load']:g}" if measured is not None else
                                             "none inside" if r.get("measured") else "not measured"),
            "measured goodput (req/s)": fmt("goodput_rps", measured, unit=False) if measured is not None else "—",
            "predicted vs measured": f"{error:+.0%}" if (error := ranking_error(r)) is not None else "—",
        })
    with st.expander(f"The twin's ranking: {sum(bool(r.get('measured')) for r in ranked)} of {len(ranked)} "
                     "configurations measured", expanded=True):
        st.table(pd.DataFrame(rows), hide_index=True)
        st.caption("Each configuration's operating point: the twin's, the highest load it predicted inside the SLA "
                   "with room; the sweep's, its measured point of highest goodput inside the SLA. The recommendation "
                   "rests on the measurements alone.")


def confirmed(advice: Recommendation) -> bool:
    """Return whether the recommendation may be taken as it stands: clear, or the only configuration inside the SLA."""
    return advice.verdict in (CLEAR, ONLY)


def _recommendation(space: SearchSpace, advice: Recommendation) -> None:
    """The operating point and the recommendation's sentence: green when confirmed, a warning otherwise."""
    best = advice.best
    head = (f"**SLA operating point: {literal(best.choice.label)} at {best.load:g} "
            f"{'in flight' if space.load_kind == CONCURRENCY else 'req/s'}** — goodput "
            f"{fmt('goodput_rps', best.goodput)}, throughput {fmt('throughput_rps', best.throughput)}, "
            f"p99 {fmt('p99_ms', best.p99)} (budget {space.p99_budget_ms:g} ms)"
            + (f"; {literal(caution)}" if (caution := best.caution()) else ""))
    (st.success if confirmed(advice) else st.warning)(f"{head}\n\n{literal(advice.text)}")


def _point_table(points, space: SearchSpace) -> pd.DataFrame:
    """Return every point's row: a refused configuration's row says so, with the server's reason as its note."""
    return pd.DataFrame([{
        "configuration": p.choice.label, "load": p.load, "status": p.status,
        label("throughput_rps"): fmt("throughput_rps", p.throughput, unit=False),
        label("goodput_rps"): fmt("goodput_rps", p.goodput, unit=False),
        label("p99_ms"): fmt("p99_ms", p.p99, unit=False),
        label("avg_batch"): fmt("avg_batch", p.get("avg_batch"), unit=False),
        label("queue_share"): fmt("queue_share", p.get("queue_share"), unit=False),
        "SLA": space.sla_state(p.p99, p.throughput) if p.status == DONE else "",
        "settled": p.stable if p.status == DONE else None,
        "measured": len(p.repeats) + 1 if p.status == DONE else 0,
        "marked": p.marked,
        "generator behind": "" if p.behind is None else sent_behind(p.behind),
        "note": p.note,
    } for p in points])


def _sweep_actions(lab: LabPort, study, space: SearchSpace, points: list[Point], advice: Recommendation | None) -> None:
    done = [p for p in points if p.status == DONE]
    best = advice.best if advice is not None else None
    if advice is not None and can_operate():
        _apply_buttons(lab, study, space, advice)
    c1, c2, c3, c4 = st.columns(4)
    if best is not None:
        c1.download_button("Recommended config.pbtxt", best.config_text or "", export.config_file_name(best),
                           key="exp:dl_best")
    c2.download_button("HTML report", safe_data(lambda: report.sweep_report(study, points, space), "The report"),
                       f"sweep-{study.id}.html", mime="text/html", key="exp:dl_sweep_report")
    c3.download_button("CSV of every window", safe_data(lambda: export.windows_csv(readable_runs(lab, study.id)),
                                                        "The CSV"),
                       f"sweep-{study.id}-windows.csv", mime="text/csv", key="exp:dl_sweep_csv")
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
        st.code(export.shell_line(export.perf_analyzer_command(lab.server_facts().endpoint.host_port, space.model, space.load_kind,
                                                               point.load, space.p99_budget_ms)), language="bash")
        st.download_button("This point's config.pbtxt", point.config_text, export.config_file_name(point),
                           key="exp:dl_point")


def _apply_buttons(lab: LabPort, study, space: SearchSpace, advice: Recommendation) -> None:
    """Apply the operating point — saying so on the button when it is not confirmed — or the runner-up, or hand the
    two to the A/B form."""
    best, runner = advice.best, advice.runner_up
    sure = confirmed(advice)
    text = (f"Apply the recommended config ({best.choice.label})" if sure
            else f"Apply {best.choice.label} — not confirmed: {advice.verdict}")
    picks = [(best, text, "exp:apply_best", "primary" if sure else "secondary")]
    if runner is not None and not sure:
        picks.append((runner, f"Apply the runner-up ({runner.choice.label}) instead", "exp:apply_runner", "secondary"))
    for point, words, key, kind in picks:
        if st.button(words, key=key, type=kind, disabled=lab.job_running()):
            _apply(lab, study, space, point, "recommended" if point is best else "runner-up")
    if runner is not None and not sure:
        named = [(f"sweep {study.id}: {p.choice.label} ({tag})", p.config_text)
                 for p, tag in ((best, "recommended"), (runner, "runner-up"))]
        st.button(f"Compare {best.choice.label} and {runner.choice.label} in an A/B", key="exp:ab_from_sweep",
                  on_click=prefill, args=(space.model, named), disabled=not all(t for _, t in named))
        if st.session_state.get("exp:ab_from_sweep"):
            st.info("The A/B comparison tab's form now holds both configurations (A: the operating point, B: the "
                    "runner-up): open that tab, set the traffic and start it.")


def _apply(lab: LabPort, study, space: SearchSpace, point: Point, what: str) -> None:
    try:
        result = lab.apply(space.model, point.choice.config(parse_config(Start.of(study).served)),
                           f"sweep {study.id}: {what} {point.choice.label}", confirm_contract=True)
    except ConfigError as exc:
        st.error(clean(str(exc)))
    else:
        st.success(result.message)
