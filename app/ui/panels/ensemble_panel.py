"""An ensemble on a concept page: its steps, each step's own queue and compute beside the ensemble's end to end,
and a way to tune a step (its knobs are the step model's own)."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from app.config.ensembles import is_ensemble, steps_of
from app.lab.ports import LabPort
from app.metrics.catalog import fmt, label

WINDOW_S = 10
FIGURES = ("request_rps", "request_us", "queue_us", "compute_us", "avg_batch")


def ensemble_panel(lab: LabPort, model: str, key: str) -> None:
    """For an ensemble: its steps with a button each to tune that step, and the per-step breakdown, live."""
    try:
        config = lab.served_config(model)
    except Exception:  # noqa: BLE001 - the picker already says why a model cannot be read
        return
    if not is_ensemble(config):
        return
    steps = steps_of(config)
    st.info(f"`{model}` is an **ensemble**: each request runs {' → '.join(f'`{s}`' for s in steps)}. An ensemble "
            "has no batching or instances of its own — those are its steps' settings: pick a step to tune it. "
            "Traffic goes to the ensemble; the table shows where its time goes, step by step.")
    cols = st.columns(len(steps))
    for col, step in zip(cols, steps):  # a callback: it runs before the picker is drawn, so it may set it
        col.button(f"Tune {step}", key=f"{key}:ens:{model}:{step}", on_click=_choose, args=(f"{key}:model", step))
    _breakdown(lab, model, tuple(steps))


def _choose(picker: str, step: str) -> None:
    st.session_state[picker] = step


@st.fragment(run_every=3.0)
def _breakdown(lab: LabPort, model: str, steps: tuple[str, ...]) -> None:
    now = time.time()
    rows = []
    for name, role in [(model, "ensemble (end to end)"), *[(s, f"step {i + 1}") for i, s in enumerate(steps)]]:
        figures = lab.measure(name, now - WINDOW_S, now)
        rows.append({"model": name, "role": role, **{label(k): fmt(k, figures.get(k), unit=False) for k in FIGURES}})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption(f"Server figures over the last {WINDOW_S} s, each from that model's own counters (queue and compute "
               "are per request of that model; the ensemble's own request time includes every step).")
