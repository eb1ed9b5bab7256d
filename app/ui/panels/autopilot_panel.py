"""The autopilot panel of the Instances and Dynamic batching pages: off by default; on, a clearly marked mode that
changes the model's config live (every change a marker on the charts with its reason), with its log and a way off."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from app.autopilot.pilot import Bounds, BoundsError
from app.autopilot.forecast import LEAD_S, ForecastError, traffic_forecast
from app.autopilot.job import KIND, PERIOD_S, WINDOW_S, AutopilotJob, unsteerable
from app.config.read import settings_of
from app.config.knobs import DELAYS_US, MAX_INSTANCES
from app.lab.ports import LabPort
from app.ui.access import can_operate
from app.ui.text import code, literal


def autopilot_panel(lab: LabPort, model: str, key: str) -> None:
    """Show the autopilot's state for the model, and (operators) turn it on or off. Only a running autopilot's
    panel redraws on its own (every 2 s); off, it costs the page nothing between reruns."""
    st.subheader("Autopilot")
    if _mine(lab, model) and lab.job_running():
        _live(lab, model)
        return
    _panel(lab, model, key)


def _mine(lab: LabPort, model: str) -> bool:
    state = lab.job()
    return state is not None and state.kind == KIND and getattr(state.progress, "model", model) == model


@st.fragment(run_every=2.0)
def _live(lab: LabPort, model: str) -> None:
    if not lab.job_running():  # it stopped (itself, or from another session): the whole page shows how it ended
        st.rerun(scope="app")
    _running(lab, lab.job())


def _panel(lab: LabPort, model: str, key: str) -> None:
    state = lab.job()
    mine = _mine(lab, model)
    if mine and state.finished is not None:
        _ended(state)
    if lab.job_running():
        st.caption(f"Off — the lab is running {literal(state.label)}; the autopilot can start when it ends.")
        return
    if not can_operate():
        st.caption("Off. Operators can turn it on.")
        return
    _form(lab, model, key)


def _running(lab: LabPort, state) -> None:
    progress = state.progress
    if progress is None:  # between the start and its study's creation
        st.warning("**AUTOPILOT STARTING** — it will change this model's config live.", icon="🛞")
        return
    bounds, serving = progress.bounds, progress.serving
    delay = serving.get("delay_us")
    if progress.advisory:
        st.info(f"**AUTOPILOT ADVICE** for {code(progress.model)}: it says what it would change to hold p99 ≤ "
                f"{bounds.sla_p99_ms:g} ms with {bounds.min_instances}–{bounds.max_instances} instances, and "
                "applies nothing.", icon="🛞")
    else:
        st.warning(f"**AUTOPILOT ON — it changes {code(progress.model)}'s config live.** "
                   f"Holding p99 ≤ {bounds.sla_p99_ms:g} ms with {bounds.min_instances}–{bounds.max_instances} "
                   f"instances; serving {serving.get('instances', '?')} instance(s)"
                   + (f", max_queue_delay {delay} µs" if delay is not None else "")
                   + (f"; adding instances ahead of {literal(progress.forecast)}" if progress.forecast else "")
                   + ". Any Apply by hand turns it off.", icon="🛞")
    if progress.last is not None:
        st.caption(f"Latest ({progress.windows} windows judged): {literal(progress.last.reason)}")
    off = "Stop the advice" if progress.advisory else "Turn the autopilot off"
    if can_operate() and st.button(off, key="autopilot:off", type="primary"):
        lab.cancel_job(wait_s=5.0)
        st.rerun(scope="app")
    _changes(progress.changes)


def _ended(state) -> None:
    if state.error:
        st.error(f"The autopilot failed: {literal(state.error)}")
        return
    result = state.result
    if result is None:
        return
    if result.stopped:
        st.error(f"The autopilot stopped itself: {literal(result.stopped)}. The config it left keeps serving "
                 f"(saved as study {result.study_id}: Experiments → saved studies).")
    else:
        st.info(f"The autopilot is off after {result.windows} windows and {sum(d.changes for d in result.changes)} "
                f"change(s); the config it left keeps serving (study {result.study_id}).")
    _changes(list(result.changes))


SHOWN_CHANGES = 10  # the newest decisions written out in full; the study keeps every one


def _changes(changes: list) -> None:
    """The newest decisions, newest first, in a table whose cells wrap: a data frame cut each reason (the one column
    that says why) at the page's edge (2026-12-07)."""
    if not changes:
        return
    newest = list(reversed(changes))[:SHOWN_CHANGES]
    st.table(pd.DataFrame([{"time": time.strftime("%H:%M:%S", time.localtime(d.t)), "decision": d.kind,
                            "why": d.reason} for d in newest]), hide_index=True)
    if len(changes) > SHOWN_CHANGES:
        st.caption(f"The newest {SHOWN_CHANGES} of {len(changes)} decisions; the study keeps every one "
                   "(Experiments → Autopilot runs).")


def _form(lab: LabPort, model: str, key: str) -> None:
    try:
        config = lab.served_config(model)
        settings = settings_of(config)
    except Exception as exc:  # noqa: BLE001 - the config panel says why; nothing to steer
        st.caption(f"Off — the model's config cannot be read: {literal(exc)}")
        return
    why = unsteerable(model, config)
    if why:
        st.caption(f"Off — {literal(why)} (the buttons above open each step's page).")
        return
    groups = settings.instance_groups
    count = groups[0].count if groups else 1
    dyn = settings.dynamic_batching
    with st.expander("Off — turn on the autopilot (it changes the config live to hold p99 under an SLA)"):
        st.caption("Every few seconds it reads the last window and, within these bounds, adds or removes an instance "
                   "(applied in place) or shortens or lengthens max_queue_delay (a background reload); every change "
                   "goes through the same safe Apply, shows on the charts with its reason, and waits a dwell before "
                   "the next. It stops itself on a refused apply, failures above the threshold, a restart, or an "
                   "Apply by hand.")
        with st.form(f"autopilot:{key}:{model}"):
            c1, c2, c3 = st.columns(3)
            sla = c1.number_input("p99 SLA (ms)", min_value=1.0, max_value=60_000.0, value=50.0, step=5.0)
            low = c2.number_input("Fewest instances", 1, MAX_INSTANCES, min(count, 1))
            high = c3.number_input("Most instances", 1, MAX_INSTANCES, max(count, min(MAX_INSTANCES, 4)))
            c4, c5, c6 = st.columns(3)
            dwell = c4.number_input("Dwell between changes (s)", min_value=2.0, max_value=600.0, value=10.0)
            stop = c5.number_input("Stop above this failure rate (%)", min_value=0.1, max_value=99.0, value=5.0)
            current = dyn.max_queue_delay_microseconds if dyn is not None else None
            delays = c6.multiselect("Delays it may choose (µs)", DELAYS_US, disabled=dyn is None,
                                    default=[d for d in DELAYS_US if current is not None and d <= max(current, 0)],
                                    help="Empty: the delay is left alone. Without dynamic batching only the "
                                         "instance count moves.")
            trace = traffic_forecast(lab.traffic)
            c7, c8 = st.columns(2)
            ahead = c7.checkbox(
                "Add instances ahead of the trace the traffic plays", value=False, disabled=trace is None,
                help=(f"A forecast: it sizes the count for the highest rate {literal(trace.forecast.source)} asks "
                      f"within the next {LEAD_S:g} s, before it arrives, and gives instances back when the "
                      "rate ahead needs fewer." if trace is not None else
                      "Play a rate trace (traffic panel → Arrivals: rate trace) to let the autopilot size ahead "
                      "of it."))
            per = c8.number_input("Requests/s one instance carries within the SLA (0: learn it live)", min_value=0.0,
                                  value=0.0, step=10.0, disabled=trace is None,
                                  help="The highest rate one instance holds with p99 under 80 % of the SLA "
                                       "(where the autopilot acts), e.g. a sweep's. 0: the most one instance has "
                                       "carried so far that way — a lower bound, so it sizes generously until the "
                                       "traffic shows more.")
            c9, c10 = st.columns(2)
            advisory = c9.checkbox("Advisory only: say what it would change and why, apply nothing", value=False,
                                   help="Each change it would make is a marker 'autopilot advice (not applied)' on "
                                        "the charts and a line below; the config serving stays as it is.")
            twin = c10.checkbox("Ask the twin how many instances hold the SLA", value=True,
                                help="Before adding, the fewest instances the twin (calibrated on this server's "
                                     "executions) expects to hold p99 under 80 % of the SLA at the offered rate; "
                                     "before giving one back, whether one fewer would. Without an answer (no "
                                     "calibration yet) the reactive rules decide alone.")
            go = st.form_submit_button("Turn the autopilot on", type="primary")
        if go:
            try:
                bounds = Bounds(float(sla), int(low), int(high), tuple(delays) if dyn is not None else (),
                                float(dwell), float(stop) / 100.0)
                forecast = traffic_forecast(lab.traffic, LEAD_S, float(per) or None) if ahead else None
                if ahead and forecast is None:
                    raise ValueError("the traffic no longer plays a rate trace: nothing to size ahead of "
                                     "(start the trace, or turn it on without the forecast)")
                lab.start_job(AutopilotJob(lab, model, bounds, window_s=WINDOW_S, period_s=PERIOD_S,
                                            forecast=forecast, advisory=bool(advisory), twin=bool(twin)))
            except (BoundsError, ForecastError, ValueError, RuntimeError) as exc:
                st.error(f"Not turned on: {literal(exc)}")
            else:
                st.rerun(scope="app")
