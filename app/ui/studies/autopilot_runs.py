"""Stored autopilot runs on the Experiments page: how each ended, what it judged and changed, and a replay of its
recorded windows through the autopilot's rules (the same bounds give the same decisions, in the same words)."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from app.autopilot.job import KIND, bounds_from, replay
from app.config.model_config import parse_config
from app.config.read import settings_of
from app.lab.ports import LabPort
from app.ui.studies.study_view import delete_button, drawn_apart, pick_study, status_box
from app.ui.text import code, literal


def autopilot_runs(lab: LabPort) -> None:
    """Pick a stored autopilot run and show it (drawn apart: a damaged one never breaks the page)."""
    st.caption("Turn the autopilot on from the Instances or Dynamic batching page (or `python -m app.experiments "
               "autopilot`); every run is kept here.")
    study = pick_study(lab, KIND, "Autopilot run")
    if study is None:
        return
    drawn_apart("This autopilot run", lambda: _run(lab, study))
    delete_button(lab, study.id, "autopilot run", f"exp:autopilot_delete:{study.id}")


def _run(lab: LabPort, study) -> None:
    status_box(f"Autopilot run {study.id} on {code(study.model)}", study.status, study.note)
    bounds = bounds_from(study.definition["bounds"])
    records = list(study.result.get("records") or [])
    st.caption(f"Bounds: p99 ≤ {bounds.sla_p99_ms:g} ms, {bounds.min_instances}–{bounds.max_instances} instances, "
               f"delays {list(bounds.delays_us) or 'left alone'}, dwell {bounds.dwell_s:g} s; {len(records)} "
               "windows judged." + _forecast_words(study.definition.get("forecast")))
    changes = study.result.get("changes") or []
    if changes:
        st.dataframe(pd.DataFrame([{"time": time.strftime("%H:%M:%S", time.localtime(d["t"])), "decision": d["kind"],
                                    "why": d["reason"]} for d in changes]), hide_index=True, width="stretch")
    else:
        st.caption("It changed nothing.")
    rows = [{"t": pd.to_datetime(r["decision"]["t"], unit="s"), "p99 (ms)": r["decision"]["figures"].get("p99_ms"),
             "instances": (r.get("serving") or {}).get("instances")} for r in records
            if r.get("decision", {}).get("figures")]
    if rows:
        frame = pd.DataFrame(rows).set_index("t")
        st.line_chart(frame[["p99 (ms)"]], height=180)
        st.line_chart(frame[["instances"]], height=120)
    if records and st.button("Replay its windows through the rules", key=f"exp:autopilot_replay:{study.id}"):
        settings = settings_of(parse_config(study.base_config))
        again = replay(records, bounds, settings)
        same = sum(a.reason == r["decision"]["reason"] and a.knobs == r["decision"]["knobs"]
                   for a, r in zip(again, records))
        (st.success if same == len(records) == len(again) else st.warning)(
            f"Replayed {len(again)} of {len(records)} recorded windows: {same} decisions the same, word for word.")


def _forecast_words(forecast: dict | None) -> str:
    """Return what the run sized ahead of ('' when it reacted to the windows alone)."""
    if not forecast:
        return ""
    per = forecast.get("instance_rps")
    given = f"{per:,.0f} req/s per instance given" if per else "the rate per instance measured live"
    source = literal(forecast.get("source", "a forecast"))
    return f" Sized ahead of {source} ({forecast.get('lead_s', 0):g} s lead, {given})."
