"""The shape every concept page shares: idea, model, config, traffic, live charts."""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app.lab.ports import Plans
from app.traffic.form import TrafficForm
from app.ui.panels.autopilot_panel import autopilot_panel
from app.ui.panels.ensemble_panel import ensemble_panel
from app.ui.page.layout import config_panel, header, lab_or_stop, model_picker
from app.ui.live.live_view import live_view
from app.ui.panels.scenario_panel import scenario_panel
from app.ui.studies.study_view import drawn_apart
from app.ui.traffic.traffic_panel import traffic_panel


def served_config(lab: Plans, model: str):
    """Return the config the model serves (its inputs shape the traffic form), None when it cannot be read."""
    try:
        return lab.served_config(model)
    except Exception:  # noqa: BLE001 - the picker says why; the form then asks only for a data path
        return None


def concept_page(key: str, title: str, concept: str, model: str, knobs: Callable, preset: TrafficForm,
                 allowed: tuple[str, ...] | None = None, per_class: bool = False,
                 panel: Callable | None = None, autopilot: bool = False) -> tuple:
    """Lay out one concept page and return (lab, chosen model)."""
    lab = lab_or_stop()
    header(title, concept)
    model = model_picker(lab, model, key, allowed)
    ensemble_panel(lab, model, key)
    left, right = st.columns(2, gap="large")
    with left:
        st.subheader("Configuration")
        config_panel(lab, model, key, knobs)
    with right:
        st.subheader("Traffic")
        traffic_panel(lab, model, key, preset, served_config(lab, model))
    if panel is not None:  # the page's own live panel (correctness, diagnosis) above the charts
        panel(lab, model)
    if autopilot:  # off by default; on, a clearly marked mode above the charts its markers land on
        drawn_apart("The autopilot panel", lambda: autopilot_panel(lab, model, key))
    st.subheader("Live")
    live_view(lab, model, key, per_class=per_class)
    scenario_panel(lab, key)
    return lab, model
