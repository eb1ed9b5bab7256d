"""The sweep form: only the knobs the chosen model can take (app.experiments.sweep.knob_offer), then the loads and SLA,
and how the top candidates are measured again before an operating point is named (SweepOptions.recheck_*)."""
from __future__ import annotations

import streamlit as st

from app.experiments.sweep.space import CONCURRENCY, P99_HEADROOM, RATE, SearchSpace
from app.experiments.sweep.sweeper import SweepOptions
from app.experiments.sweep.knob_offer import KnobOffer, knob_offer
from app.config.knobs import DELAYS_US, MAX_INSTANCES, SIZES
from app.lab.ports import LabPort
from app.text_limits import MAX_LABEL_CHARS
from app.ui.access import guarded
from app.ui.studies.study_view import drawn_apart
from app.ui.text import literal
from loadgen.limits import LIMITS
from app.experiments.sweep.sweeper import sweep_job

SIZES_LABEL = "max_batch_size (empty: keep)"
CONTRACT_SIZES_LABEL = "max_batch_size (empty: keep 0) — a contract change"


def _numbers(text: str, kind=float) -> tuple:
    parts = [p for p in text.replace(";", ",").split(",") if p.strip()]
    return tuple(kind(p.strip()) for p in parts)


def _offer(lab: LabPort, model: str) -> KnobOffer:
    """Return what a sweep may vary on the model, from the config it serves; everything when that cannot be read."""
    try:
        served = lab.served_config(model)
    except Exception as exc:  # noqa: BLE001 - the form still works; the sweep says what it cannot apply
        st.caption(f"The config {literal(model)} serves could not be read ({literal(guarded(exc))}): every knob is "
                   "offered, and the sweep says which configurations the server refuses.")
        return knob_offer(None)
    return knob_offer(served)


def sweep_form(lab: LabPort, models: list[str]) -> None:
    """Define a sweep of the knobs the model can take and start it (drawn apart: an error in it leaves the rest of
    the page)."""
    drawn_apart("The sweep form", lambda: _sweep_form(lab, models))


def _sweep_form(lab: LabPort, models: list[str]) -> None:
    c1, c2 = st.columns(2)
    model = c1.selectbox("Model", models, index=models.index("gpu_sim") if "gpu_sim" in models else 0,
                         key="exp:sweep_model")
    offer = _offer(lab, model)
    if not (offer.instances or offer.batch_sizes or offer.delays):
        st.info(f"Nothing to sweep on {literal(model)}: {offer.why}.")
        return
    batches: list[int] = []
    if offer.batch_sizes:
        batches = c2.multiselect(CONTRACT_SIZES_LABEL if offer.size_is_contract else SIZES_LABEL, list(SIZES),
                                 default=[], key=f"exp:sweep_sizes:{model}")
    if offer.size_is_contract and batches:
        st.warning(f"{literal(model)} serves max_batch_size 0: giving it {', '.join(map(str, sorted(batches)))} adds "
                   "a batch dimension to its inputs — a contract change. Clients written for it fail while those "
                   "configurations serve; the sweep applies them with the change confirmed and serves the starting "
                   "config again at its end.")
    batching = offer.batching(batches)
    if not batching:
        st.caption(f"No queue delays or preferred batch sizes for {literal(model)}: {offer.why}.")
    with st.form("exp:sweep_form"):
        c1, c2, c3 = st.columns(3)
        instances = (c1.multiselect("Instance counts", list(range(1, MAX_INSTANCES + 1)), default=[1, 2])
                     if offer.instances else [])
        delays = c2.multiselect("max_queue_delay (µs)", list(DELAYS_US), default=[0, 2000]) if batching else []
        preferred = (c3.text_input("Preferred batch sizes (sets separated by ';', e.g. 4,8; 8,16; empty: keep)", "",
                                   max_chars=MAX_LABEL_CHARS) if batching else "")
        c4, c5, c6 = st.columns(3)
        default = c4.checkbox("Also the config serving now (default)", value=True)
        kind = c5.radio("Load", [CONCURRENCY, RATE], horizontal=True, format_func=lambda k: (
            "closed loop: concurrency" if k == CONCURRENCY else "open loop: rate (req/s)"))
        loads = c6.text_input("Load levels", "1, 2, 4, 8, 16", max_chars=MAX_LABEL_CHARS)
        c7, c8, c9 = st.columns(3)
        budget = c7.number_input("p99 budget (ms)", min_value=0.1, max_value=float(LIMITS["sla_ms"].high), value=40.0,
                                 step=5.0)
        floor = c8.number_input("Minimum throughput (req/s, 0: none)", min_value=0.0, value=0.0, step=50.0)
        adaptive = c9.radio("Search", ["adaptive", "grid"], horizontal=True,
                            help="Adaptive: per configuration, only the loads needed to find its highest load inside "
                                 "the SLA, and configurations that cannot beat the best are dropped. Grid: every "
                                 "point.")
        c10, c11, c12 = st.columns(3)
        top = c10.number_input("Re-measure the top candidates (0–10)", min_value=0, max_value=10,
                               value=SweepOptions.recheck_top, step=1,
                               help="Before naming an operating point, the best configuration and the others within "
                                    "the noise of it (at most this many) are measured again, interleaved; the "
                                    "recommendation rests on every measurement. 0: none (it then says it was "
                                    "measured once).")
        rounds = c11.number_input("Rounds of re-measuring (1–5)", min_value=1, max_value=5,
                                  value=SweepOptions.recheck_rounds, step=1,
                                  help="How many times each candidate is measured again (A B C, A B C, …).")
        name = c12.text_input("Sweep label", placeholder="e.g. instances × delay", max_chars=MAX_LABEL_CHARS)
        c13, c14 = st.columns([1, 2])
        headroom = c13.number_input(
            "p99 headroom (% of the budget)", min_value=0, max_value=50, value=round(P99_HEADROOM * 100), step=5,
            help="A point whose p99 is inside the budget but within this much of it is on the budget's edge: "
                 "measured again, it is as likely over as under (perf_analyzer counts p99s within 10 % of each "
                 "other as one figure). The sweep names such a point only when no point holds the budget with "
                 "room, and says which it passed over. 0: the budget alone.")
        twin_top = c14.number_input(
            "Let the twin rank: measure only its top configurations (0: measure every one)", min_value=0,
            max_value=20, value=0, step=1,
            help="A short probe calibrates the twin on the config serving now; it then predicts every configuration "
                 "at every load, and only the best this many are measured (and up to as many more that it predicts "
                 "within 10 % of the last of them: it cannot tell those apart). The others are listed with their "
                 "rank and the goodput predicted. The twin is wrong where something outside the model's execution "
                 "limits it (the client, the host's CPUs): it says so, and then a full sweep is the honest choice.")
        go = st.form_submit_button("Start sweep", type="primary", disabled=lab.job_running())
    if not go:
        return
    try:
        pref_sets = tuple(_numbers(s, int) for s in preferred.split(";") if s.strip())
        space = SearchSpace(model=model, instances=tuple(instances), delays_us=tuple(delays),
                            max_batch_sizes=tuple(batches), preferred=pref_sets, include_default=default,
                            load_kind=kind, loads=_numbers(loads), p99_budget_ms=float(budget),
                            min_throughput_rps=float(floor) or None, adaptive=adaptive == "adaptive",
                            p99_headroom=float(headroom) / 100)
        options = SweepOptions(recheck_top=int(top), recheck_rounds=int(rounds), twin_top=int(twin_top))
        lab.start_job(sweep_job(lab, space, name, options))
    except (ValueError, RuntimeError) as exc:
        st.error(str(exc))
    else:
        again = (f"; then up to {options.recheck_top} candidates measured {options.recheck_rounds}× more"
                 if options.recheck_top else "; no candidate measured again")
        ranked = (f"; the twin ranks them and only its top {options.twin_top} are measured" if options.twin_top
                  else "")
        st.success(f"Sweep started: {len(space.choices())} configurations × {len(space.loads)} loads "
                   f"(at most {space.points()} points){ranked}{again}.")
