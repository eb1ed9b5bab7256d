"""Experiments: sweeps to the SLA operating point, A/B comparisons with confidence, saved runs, reports."""
import streamlit as st

from app.experiments.sweep.space import P99_HEADROOM
from app.ui.studies.study_job import ab_form, ab_results, job_panel, saved_runs, sweep_form, sweep_results
from app.ui.access import can_operate
from app.ui.page.layout import lab_or_stop
from app.ui.studies.autopilot_runs import autopilot_runs
from app.ui.studies.trace_sweep_panel import trace_sweep_form, trace_sweep_results

lab = lab_or_stop()
st.title("Experiments")
st.markdown(
    "**Sweep** configurations × load on the live server (hot reloads, no restarts) and get the SLA operating "
    "point: the highest goodput whose client p99 stays inside the budget with room "
    f"({P99_HEADROOM:.0%} by default: a point within "
    "it is on the budget's edge, named only when nothing has room). **Compare** two or three configurations "
    "under identical, seeded traffic in repeated, interleaved trials: every difference comes with an interval, the "
    "verdict's figures held at 95 % together, and the verdict says so when there is no clear difference. **Judge on "
    "a trace**: play your traffic's shape (a shipped trace or your rate file, compressed and scaled) on each "
    "configuration and get the fewest instances that hold the SLA through it — a steady load at the trace's mean rate "
    "picks what the peaks overrun (measured on gpu_sim: 1 instance holds the flash crowd's mean at p99 28 ms and "
    "spends 16 of 120 s over a 50 ms SLA in the crowd; the trace picks 2). Reports open in any browser without a "
    "server.")
job_panel(lab)
models = [m.name for m in lab.status().models if m.state == "READY"] or ["gpu_sim"]
sweep_tab, trace_tab, ab_tab, pilot_tab, runs_tab = st.tabs(["Sweep", "Judged on a trace", "A/B comparison",
                                                              "Autopilot runs", "Saved runs"])
with sweep_tab:
    if can_operate():
        with st.expander("New sweep", expanded=not lab.studies(kind="sweep")):
            sweep_form(lab, models)
    sweep_results(lab)
with trace_tab:
    if can_operate():
        with st.expander("New trace-judged sweep", expanded=not lab.studies(kind="trace_sweep")):
            trace_sweep_form(lab, models)
    trace_sweep_results(lab)
with ab_tab:
    if can_operate():
        with st.expander("New comparison", expanded=not lab.studies(kind="ab")):
            ab_form(lab, models)
    ab_results(lab)
with pilot_tab:
    autopilot_runs(lab)
with runs_tab:
    saved_runs(lab)
