"""The guided scenarios a concept page offers: the claim, Run, progress with narration, the measured verdict."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.store.database import RUNNING
from app.lab.ports import LabPort
from app.scenarios.base import Scenario, Script
from app.scenarios.claims import SCENARIOS
from app.scenarios.runner import caution, phase_table, start_scenario
from app.ui.access import can_operate

# Material icons ship with Streamlit's own font: emoji such as U+2705 draw as empty boxes with Debian's fonts.
HELD, NOT_HELD = ":green[:material/check_circle: held]", ":red[:material/cancel: did not hold]"
_SEEN = "scn:job-seen"  # session key: the start (epoch s) of the study job this session last saw running


def scenario_panel(lab: LabPort, page: str) -> None:
    """Offer the page's scenarios; each runs on the live server and ends with a verdict."""
    offered = [s for s in SCENARIOS.values() if s.page == page]
    if not offered:
        return
    st.subheader("Try it: guided scenarios")
    ready = {m.name for m in lab.status().models if m.state == "READY"}
    current = _running_scenario(lab)
    for scenario in offered:
        with st.expander(f"{scenario.title} ({scenario.source})"):
            st.markdown(f"**Expected:** {scenario.expect}")
            phases = scenario.phases(False)
            missing = scenario.missing(ready)
            st.caption("Phases: " + "; ".join(p.name for p in phases) + ". It takes over the traffic and the "
                       "model's config, serves the starting config again at the end and starts the traffic that "
                       "was running again.")
            if missing:
                st.info(f"This scenario runs on the lab's own model{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(f'`{m}`' for m in missing)}, which this server does not serve. **Run on the "
                        "lab's models** starts a second tritonserver beside yours (a private copy of the lab's "
                        "models, on other ports) and runs it there: your server, models and traffic are untouched. "
                        "The verdict shows here; its live charts are that server's, not this page's.")
            if can_operate():
                c1, c2, c3 = st.columns([1, 2, 1])
                full = c2.checkbox("Full length (slower, steadier)", key=f"scn:{scenario.name}:full")
                if scenario.script is not None:
                    with c3.popover("Presenter script", icon=":material/record_voice_over:"):
                        _script(scenario)
                text = "Run on the lab's models" if missing else "Run"
                if c1.button(text, key=f"scn:{scenario.name}:run", disabled=lab.job_running(), type="primary"):
                    _start(lab, scenario.name, full, bool(missing))
                    if lab.job_running():  # the page again: every Run disabled, this one's progress shown
                        st.rerun()
            if current == scenario.name:
                _progress(lab, scenario.name)
            try:
                _last_verdict(lab, scenario)
            except Exception as exc:  # noqa: BLE001 - one unreadable stored verdict must not break the page
                st.warning(f"The last stored run of this scenario cannot be read: {type(exc).__name__}: {exc}")
    drawn = (lab.job_running(), current)
    (_watch_busy if drawn[0] else _watch_idle)(lab, drawn)


def _running_scenario(lab: LabPort) -> str | None:
    """Return the name of the scenario the lab's job runs now, None when it runs none."""
    state = lab.job()
    if not lab.job_running() or state is None or state.kind != "scenario" or state.progress is None:
        return None
    try:
        return lab.study(state.progress.study_id).definition.get("scenario")
    except KeyError:  # its study is not stored (yet): no progress to show
        return None


def _watch(lab: LabPort, drawn: tuple[bool, str | None]) -> None:
    """Draw the whole page again when a job starts or ends (this session's or another's) or a scenario's run
    shows its progress: Run and the progress follow it. drawn: (a job ran, the scenario it ran) when drawn."""
    running = lab.job_running()
    if (running, _running_scenario(lab) if running else None) != drawn:
        st.rerun(scope="app")


# One watcher a page, not a 1 s poll a scenario: every fragment run re-renders the whole page in the browser, and
# three idle polls a second were most of the Dynamic batching page's browser CPU (see docs/MEASUREMENTS.md)
_watch_busy = st.fragment(run_every=2.0)(_watch)
_watch_idle = st.fragment(run_every=5.0)(_watch)


def _script(scenario: Scenario) -> None:
    """The presenter's words for the operator: before, during each phase, after by verdict."""
    script: Script = scenario.script
    st.markdown(f"**Before you press Run:** {script.before}")
    st.markdown("**While it runs:**\n" + "\n".join(f"- *{p.name}:* {script.during(p.name)}"
                                                    for p in scenario.phases(False)))
    st.markdown(f"**If the claim held:** {script.after_held}")
    st.markdown(f"**If it did not:** {script.after_not}")


def _start(lab: LabPort, name: str, full: bool, elsewhere: bool) -> None:
    try:
        if elsewhere:
            with st.spinner("Starting a tritonserver with the lab's own models…"):
                target = lab.lab_models()
        else:
            target = lab
        start_scenario(lab, name, full, on=target)
    except Exception as exc:  # noqa: BLE001 - a server that cannot start is said, not crashed on
        st.error(f"The scenario could not start: {exc}")


@st.fragment(run_every=1.0)
def _progress(lab: LabPort, name: str) -> None:
    """The running scenario's progress and narration, each second; the whole page again once it ends."""
    state = lab.job()
    if lab.job_running() and state is not None:
        st.session_state[_SEEN] = state.started
    elif st.session_state.pop(_SEEN, None) is not None:
        st.rerun()  # the study ended: the whole page again, so its verdict shows and Run is enabled at once
    if _running_scenario(lab) != name:
        return
    p = state.progress
    st.progress(min(1.0, p.done / max(p.total, 1)), text=f"{p.current} ({p.done} of {p.total})")
    if p.narration:
        st.info(p.narration)
    script = SCENARIOS[name].script
    if script is not None and can_operate() and (line := script.during(p.current)):
        st.caption(f"Presenter: {line}")
    if p.log:
        st.text("\n".join(p.log))


def _last_verdict(lab: LabPort, scenario: Scenario) -> None:
    runs = [s for s in lab.studies(kind="scenario", model=scenario.model)
            if s.definition.get("scenario") == scenario.name and s.status != RUNNING]
    _job_error(lab, scenario, runs[0].created_at if runs else None)
    if not runs:
        return
    last = runs[0]
    checks = last.result.get("checks", [])
    if last.status != "done" or not checks:
        st.warning(f"Last run ({last.status}): {last.note or 'no verdict'}")
        return
    passed = all(c["ok"] for c in checks)
    (st.success if passed else st.error)(
        f"Last run: {'the claim held' if passed else 'the claim did not hold'} "
        f"({'full length' if last.definition.get('full') else 'shortened phases'})",
        icon=":material/check_circle:" if passed else ":material/cancel:")
    for c in checks:
        st.markdown(f"{HELD if c['ok'] else NOT_HELD} — {c['claim']}: {c['measured']} (held to {c['margin']})")
    if last.note:
        st.caption(f"Afterwards: {last.note}.")
    if scenario.script is not None and can_operate():
        st.caption(f"Presenter: {scenario.script.after(passed)}")
    phases = lab.runs(kind="phase", study_id=last.id)
    if note := caution({run.point: run.window() for run in phases}):
        st.warning(note)
    rows = phase_table(phases)
    if rows:
        st.caption("What each phase measured (after its warm-up; the same windows the checks use):")
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def _job_error(lab: LabPort, scenario: Scenario, stored_at: float | None) -> None:
    """Say why this scenario's last job ended before it stored a study (the server lacks a model, say)."""
    state = lab.job()
    if (state is None or lab.job_running() or state.kind != "scenario" or state.label != scenario.title
            or not state.error or (stored_at is not None and stored_at >= state.started)):
        return
    st.error(f"The last run stopped before it measured anything: {state.error}")
