"""The diagnosis panel: the field guide's pattern for the current window, with a one-click fix."""
from __future__ import annotations

import time

import streamlit as st

from app.config.edits import set_settings
from app.config.errors import ConfigError
from app.config.read import settings_of
from app.diagnosis import Finding, diagnose
from app.diagnosis_window import window_from
from app.knobs import apply_knobs, describe
from app.lab import Lab
from app.ui.state import viewer_mode

SPAN_S = 20


def diagnosis_panel(lab: Lab, model: str) -> None:
    """Read the last seconds and name what they show."""
    _panel(lab, model)


@st.fragment(run_every=2.0)
def _panel(lab: Lab, model: str) -> None:
    st.subheader(f"Diagnosis — last {SPAN_S} s")
    try:
        settings = settings_of(lab.config.current(model))
    except ConfigError as exc:
        st.error(str(exc))
        return
    msnap = lab.metrics.snapshot(model=model, window_s=SPAN_S)
    since = time.time() - SPAN_S
    lrows = [r for r in lab.load.snapshot(window_s=SPAN_S).timeline if r["t"] >= since]
    window = window_from(msnap.timeline, lrows, msnap.per_item_us_by_batch, settings)
    if not window.infer_rps:
        st.info("No traffic in the window: start traffic to diagnose.")
        return
    share = (window.queue_us or 0) / window.request_us if window.request_us else None
    st.markdown(
        f"p50 **{_f(window.p50_ms)} ms**, p99 **{_f(window.p99_ms)} ms** (client) · server time per request: "
        f"queue/batching wait **{_f((window.queue_us or 0) / 1000)} ms**, compute **{_f((window.compute_us or 0) / 1000)} ms**"
        + (f" → the tail is mostly **{'waiting' if share > 0.5 else 'compute'}** ({share:.0%} waiting)" if share is not None else "")
    )
    findings = diagnose(window)
    if not findings:
        st.success("No field-guide pattern in this window.")
    for finding in findings:
        _finding(lab, model, settings, finding)


def _finding(lab: Lab, model: str, settings, finding: Finding) -> None:
    with st.container(border=True):
        st.markdown(f"**{finding.title}**  \n{finding.evidence}  \n*Try:* {finding.suggestion}")
        if finding.knobs and not viewer_mode():
            label = f"Apply the suggestion: {describe(finding.knobs)}"
            if st.button(label, key=f"diag:{model}:{finding.pattern}"):
                new = apply_knobs(settings, finding.knobs)
                try:
                    result = lab.apply(model, set_settings(lab.config.current(model), new), f"diagnosis: {describe(finding.knobs)}")
                except ConfigError as exc:
                    st.error(f"Not applied — the previous config keeps serving.\n\n{exc}")
                else:
                    st.success(result.message)


def _f(value) -> str:
    return "—" if value is None else f"{value:.1f}"
