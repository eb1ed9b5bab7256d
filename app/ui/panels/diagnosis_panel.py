"""The diagnosis panel: the field guide's pattern for the current window, with a one-click fix."""
from __future__ import annotations

import time

import streamlit as st

from app.config.edits import set_settings
from app.config.errors import ConfigError
from app.config.read import settings_of
from app.diagnosis.patterns import Finding, where_time_goes
from app.diagnosis.diagnose import SPAN_S, diagnose_model
from app.config.knobs import apply_knobs, describe
from app.lab.ports import LabPort
from app.metrics.catalog import fmt
from app.ui.live.live_view import p99_text
from app.ui.access import can_operate
from app.ui.text import literal



def diagnosis_panel(lab: LabPort, model: str) -> None:
    """Read the last seconds and name what they show."""
    _panel(lab, model)


@st.fragment(run_every=4.0)
def _panel(lab: LabPort, model: str) -> None:
    st.subheader(f"Diagnosis — last {SPAN_S} s")
    applied = st.session_state.pop(f"diagnosis:{model}:applied", None)
    if applied:
        st.success(f"Applied: {applied}. The knobs above show what now serves; the window restarts after the reload.")
    try:
        settings = settings_of(lab.served_config(model))
    except ConfigError as exc:
        st.error(str(exc))
        return
    now = time.time()
    change = lab.last_change(model)
    t0 = max(now - SPAN_S, change.settled + 1.0 if change and change.end is not None else 0.0)
    seen = diagnose_model(lab, model, t0, now, settings)
    figures, window, findings = seen.figures, seen.symptoms, seen.findings
    if not window.infer_rps and not window.failed:
        st.info("No traffic in the window: start traffic to diagnose.")
        return
    if figures.seconds < SPAN_S - 1:
        st.caption(f"The window starts {t0 - (now - SPAN_S):.0f} s late: only time since the last config change counts.")
    if not window.infer_rps:  # every request failed: no latency to speak of, only the failures
        st.caption("No answers in the window: latency and batching need requests that succeed.")
        for finding in findings:
            _finding(lab, model, settings, finding)
        return
    st.markdown(
        f"client p50 **{fmt('p50_ms', window.p50_ms)}**, p99 **{p99_text(figures)}** · server time per request: "
        f"queue/batching wait **{fmt('queue_us', window.queue_us)}**, compute **{fmt('compute_us', window.compute_us)}**"
        + (f" → {where_time_goes(window)}" if where_time_goes(window) else "")
    )
    if not window.tail_trusted and window.p99_ms is not None:
        st.caption("Too few requests in the window to judge the tail (pattern A): it needs more samples.")
    if not findings:
        st.success("No field-guide pattern in this window.")
    for finding in findings:
        _finding(lab, model, settings, finding)


def _finding(lab: LabPort, model: str, settings, finding: Finding) -> None:
    with st.container(border=True):
        title = f"**{literal(finding.title)}**" if finding.pattern == "failing" else f"**{finding.title}**"
        st.markdown(f"{title}  \n{finding.evidence}  \n*Try:* {finding.suggestion}")
        if finding.knobs and can_operate():
            label = f"Apply the suggestion: {describe(finding.knobs)}"
            if st.button(label, key=f"diag:{model}:{finding.pattern}"):
                new = apply_knobs(settings, finding.knobs)
                try:
                    result = lab.apply(model, set_settings(lab.served_config(model), new), f"diagnosis: {describe(finding.knobs)}")
                except ConfigError as exc:
                    st.error(f"Not applied — the previous config keeps serving.\n\n{exc}")
                else:
                    st.session_state[f"diagnosis:{model}:applied"] = result.message
                    st.rerun(scope="app")  # the page's knobs redraw from what now serves
