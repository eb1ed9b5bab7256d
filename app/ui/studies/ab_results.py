"""A stored A/B comparison on the page, in the report's order and words: how it ended, the caution, each arm's
findings (the opening in a box — green when a headline figure differs clearly — then one bullet per sentence), the
recommendation, then each arm's table and difference chart, the trials, the configs' diffs and the downloads. Arms
are named by letter and by what they change (ABResult.title), as in the report."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.config.history import unified_diff
from app.experiments.report import study_charts as charts, export, html_report as report
from app.experiments.ab.comparison import HEADLINE, ABResult
from app.experiments.ab.confidence import UNCLEAR
from app.store.database import DONE
from app.experiments.stored import read_ab
from app.lab.ports import LabPort
from app.metrics.catalog import fmt, label
from app.ui.studies.study_view import (cannot_read, problems_box, readable_runs, resume_button, safe_data,
    show_chart, status_box, study_results)
from app.ui.text import literal
from loadgen.stats import ALL
from app.experiments.ab.comparison import resumed_ab_job


def ab_results(lab: LabPort) -> None:
    """Pick a comparison; show how it ended, its verdict, intervals, charts and downloads — drawn apart, so a damaged
    comparison shows what is wrong and can still be deleted."""
    study_results(lab, "ab", "Comparison", "comparison", "exp:del_ab", _comparison)


def clear_on_headline(result: ABResult, arm: str) -> bool:
    """Return whether arm differs clearly from the baseline on a figure the verdict rests on."""
    return any(d.clear for c, d in result.differences(arm) if c == ALL and d.key in HEADLINE)


def _comparison(lab: LabPort, study) -> None:
    record = read_ab(lab, study)
    if cannot_read("Comparison", study.id, record.broken, "trials"):
        return
    sid, plan = study.id, record.plan
    result = ABResult(sid, plan, record.trials, study.status, study.note)
    status_box(f"Comparison {sid}", study.status, study.note)
    problems_box("comparison", record.problems)
    st.caption(f"{literal(study.model)}: {' / '.join(literal(result.title(a.name)) for a in plan.arms)}; "
               f"{plan.trials} trials of {plan.trial_s:g} s (+{plan.warmup_s:g} s warm-up) under the same seeded "
               "traffic, order alternating" + (": each trial plays the whole trace once per configuration, judged "
                                               "on the trace." if plan.trace else "."))
    resume_button(lab, study, "runs only the trials not finished", resumed_ab_job)
    if result.trials:
        _verdict(result, study.status)
        if plan.trace:
            _trace_table(result)
    for arm in plan.arms[1:]:
        _differences(result, arm.name)
    if result.trials:
        show_chart(charts.ab_trials(result))
        show_chart(charts.ab_timeline(result))
    base = plan.arms[0]
    for arm in plan.arms[1:]:
        diff = unified_diff(base.config_text, arm.config_text, "A", result.letter(arm.name))
        with st.expander(f"Config diff A → {literal(result.title(arm.name))}"):
            st.code(diff or "same config", language="diff")
    c1, c2 = st.columns(2)
    c1.download_button("HTML report", safe_data(lambda: report.ab_report(study, result), "The report"),
                       f"ab-{sid}.html", mime="text/html", key="exp:dl_ab_report")
    c2.download_button("CSV of every window", safe_data(lambda: export.windows_csv(readable_runs(lab, sid)), "The CSV"),
                       f"ab-{sid}-windows.csv", mime="text/csv", key="exp:dl_ab_csv")


def _verdict(result: ABResult, status: str) -> None:
    """The caution first, then each arm's findings (clear ones first), then the recommendation they qualify."""
    caution = result.caution()
    if caution:
        st.warning(f"Caution: {literal(caution)}")
    for arm in result.plan.arms[1:]:
        opening, *rest = result.findings(arm.name)
        (st.success if clear_on_headline(result, arm.name) else st.info)(literal(opening))
        if rest:
            st.markdown("\n".join(f"- {literal(s)}" for s in rest))
    _, why = result.recommendation()
    qualifier = ", once the caution above is dealt with" if caution else ""
    qualifier += "" if status == DONE else " (from the trials so far)"
    st.markdown(f"**Recommended{qualifier}:** {literal(why)}")


def _differences(result: ABResult, arm: str) -> None:
    """One arm against the baseline: its table of differences with intervals, and their chart."""
    letter = result.letter(arm)
    rows = [{"class": cls, "metric": label(d.key), "A mean": fmt(d.key, d.a_mean, unit=False),
             f"{letter} mean": fmt(d.key, d.b_mean, unit=False),
             "difference": f"{d.relative:+.1%}" if d.relative is not None else "—",
             "interval": (f"{d.relative_interval[0]:+.1%} to {d.relative_interval[1]:+.1%}"
                          if d.relative_interval else "—"),
             "level": d.level_text, "verdict": d.verdict} for cls, d in result.differences(arm)]
    if not rows:
        return
    st.markdown(f"##### {literal(result.title(arm))} against A")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    show_chart(charts.ab_differences(result, arm))
    st.caption(f"A difference is called only when its interval excludes zero and it is at least "
               f"{result.plan.min_effect:.0%}; '{UNCLEAR}' otherwise. {result.intervals_note()}")


def _trace_table(result: ABResult) -> None:
    """Each arm's trace figures, pooled over its trials: goodput, worst-minute p99, seconds over, instance-seconds."""
    from app.experiments.trace.judge import pooled  # noqa: PLC0415

    rows = []
    for arm in result.plan.arms:
        scores = result.trace_scores(arm.name)
        if not scores:
            continue
        s = pooled(scores)
        rows.append({"configuration": result.title(arm.name), "trials": len(scores),
                     "goodput (req/s)": f"{s.goodput_rps:,.1f}",
                     "worst-minute p99 (ms)": "—" if s.worst_minute_p99_ms is None else f"{s.worst_minute_p99_ms:,.1f}",
                     "seconds over SLA": f"{s.seconds_over} of {s.seconds}",
                     "instance-seconds": f"{s.instance_seconds:,.0f}", "holds": s.holds(result.plan.tolerance)})
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
