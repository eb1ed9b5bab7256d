"""The saved runs tab: save the current run; list, relabel, delete and export saved runs (one that cannot be read
whole says what is wrong and can still be deleted); two side by side, with no verdict."""
from __future__ import annotations

import difflib
import json

import pandas as pd
import streamlit as st

from app.experiments.report import export
from app.experiments.capture import compare, save_run
from app.lab.ports import LabPort
from app.metrics.catalog import fmt, label
from app.store.database import Experiment
from app.text_limits import MAX_LABEL_CHARS
from app.timeline.figures import Figures
from app.ui.access import can_operate, guarded
from app.ui.studies.study_view import drawn_apart, safe_data, when
from app.ui.text import literal
from loadgen.stats import ALL


def saved_runs(lab: LabPort) -> None:
    """Save the current run; list, relabel, delete, export saved runs; show two side by side (drawn apart: an error
    in it leaves the rest of the page)."""
    drawn_apart("Saved runs", lambda: _saved_runs(lab))


def _saved_runs(lab: LabPort) -> None:
    if can_operate():
        c1, c2 = st.columns([3, 1])
        name = c1.text_input("Label for the current run", placeholder="e.g. delay 2000 µs, 2 instances",
                             key="exp:label", max_chars=MAX_LABEL_CHARS)
        if c2.button("Save current run", type="primary", key="exp:save", width="stretch"):
            try:
                saved = save_run(lab, name)
            except ValueError as exc:
                st.error(str(exc))
            else:
                st.success(f"Saved run {saved.id}: {literal(saved.label)} ({saved.outcome.get('window', '')})")
    runs = lab.runs()
    if not runs:
        st.info("No saved runs yet.")
        return
    table = pd.DataFrame([_listed(e, e.window(), any(r.broken for r in runs)) for e in runs])
    st.dataframe(table, hide_index=True, width="stretch")
    ids = [e.id for e in runs]
    names = {e.id: f"{e.id}: {e.label}" + (" — cannot be read whole" if e.broken else "") for e in runs}
    pick = st.selectbox("Run", ids, format_func=names.get, key="exp:run_pick")
    with st.container():
        drawn_apart(f"Run {pick}", lambda: _saved_run(lab, next(e for e in runs if e.id == pick)))
    if len(runs) >= 2:
        with st.container():
            drawn_apart("The comparison of two runs", lambda: _two_runs(lab, runs, ids, names))


def _listed(e: Experiment, figures: Figures, broken: bool) -> dict:
    """Return a saved run's row of the list: when, seed, and its headline figures."""
    return {
        "id": e.id, "label": e.label, "model": e.model,
        "window": f"{when(e.started_at)} + {e.ended_at - e.started_at:,.0f} s" if e.started_at and e.ended_at else "—",
        "seed": e.seed, label("p99_ms"): fmt("p99_ms", figures.get("p99_ms"), unit=False),
        "n": figures.samples() if ALL in figures.client else None,
        label("throughput_rps"): fmt("throughput_rps", figures.get("throughput_rps"), unit=False),
        label("avg_batch"): fmt("avg_batch", figures.get("avg_batch"), unit=False),
        "reloads left out": len(e.reloads),
        **({"cannot be read": e.broken} if broken else {}),
    }


def _saved_run(lab: LabPort, run) -> None:
    """One saved run: what cannot be read of it, downloads, relabel, delete."""
    if run.broken:
        st.warning(f"Run {run.id} cannot be read whole: {literal(guarded(run.broken))}. What cannot be read shows as "
                   "'—'; Delete removes it.")
    pick = run.id
    c1, c2, c3, c4 = st.columns(4)
    c1.download_button("Run as JSON", json.dumps(run.__dict__, default=str, indent=1), f"run-{pick}.json",
                       mime="application/json", key="exp:dl_run")
    c2.download_button("CSV of its seconds", safe_data(lambda: export.windows_csv([run]), "The CSV"), f"run-{pick}.csv",
                       mime="text/csv", key="exp:dl_run_csv")
    if can_operate():
        new = c3.text_input("New label", key="exp:relabel_text", label_visibility="collapsed", placeholder="new label",
                            max_chars=MAX_LABEL_CHARS)
        if c3.button("Relabel", key="exp:relabel") and new.strip():
            try:
                lab.relabel_run(pick, new)
            except ValueError as exc:  # a label over MAX_LABEL_CHARS sent around the widget
                st.error(str(exc))
            else:
                st.rerun()
        if c4.button("Delete run", key="exp:delete_run"):
            lab.delete_run(pick)
            st.rerun()


def _two_runs(lab: LabPort, runs, ids: list[int], names: dict) -> None:
    """Two saved runs side by side: the changes, and no verdict."""
    a_col, b_col = st.columns(2)
    a_id = a_col.selectbox("A", ids, index=min(1, len(ids) - 1), format_func=names.get, key="exp:a")
    b_id = b_col.selectbox("B", ids, index=0, format_func=names.get, key="exp:b")
    a, b = (next(e for e in runs if e.id == i) for i in (a_id, b_id))
    st.subheader(f"A: {literal(a.label)}  vs  B: {literal(b.label)}")
    st.caption("Two single runs show how the figures changed but not whether the change is more than noise: "
               "for a verdict, compare the configs in an A/B comparison (repeated, interleaved trials).")
    st.dataframe(pd.DataFrame(compare(a, b)), hide_index=True, width="stretch")
    diff = "".join(difflib.unified_diff(a.config_text.splitlines(True), b.config_text.splitlines(True), "A", "B"))
    with st.expander("Config diff A → B", expanded=bool(diff)):
        st.code(diff or "same config", language="diff")
