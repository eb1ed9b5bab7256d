"""Page scaffolding: the server banner, the model picker and the config panel with Apply and Undo."""
from __future__ import annotations

import hashlib
from collections.abc import Callable

import streamlit as st

from app.config.edits import set_settings
from app.config.errors import ConfigError
from app.config.read import settings_of
from app.config.settings import ModelSettings
from app.knobs import summarize_change
from app.lab import Lab
from app.server.embedded import ServerStartError
from app.ui.state import get_lab, viewer_mode


def lab_or_stop() -> Lab:
    """Return the shared Lab, or show why the server is not there and stop the page."""
    try:
        lab = get_lab()
    except (ServerStartError, OSError, ValueError) as exc:
        st.error(f"The Triton server could not be started or reached.\n\n```\n{exc}\n```")
        if st.button("Try again"):
            st.rerun()
        st.stop()
    status = lab.metrics.snapshot(model=None, window_s=5)
    if not status.up and status.error != "waiting for the first scrape":
        st.warning(f"Server not answering: {status.error or 'down'} — charts resume when it is back.")
    return lab


def header(title: str, concept: str, expanded: bool = False) -> None:
    """Title plus the concept explanation."""
    st.title(title)
    with st.expander("The idea, and what to look for", expanded=expanded):
        st.markdown(concept)


def model_picker(lab: Lab, preferred: str, key: str, allowed: tuple[str, ...] | None = None) -> str:
    """Select box of the loaded models, preferring one."""
    names = [m.name for m in lab.status().models if m.state == "READY"] or [preferred]  # status() never raises
    if allowed:
        names = [n for n in names if n in allowed] or list(allowed)
    index = names.index(preferred) if preferred in names else 0
    model = st.selectbox("Model", names, index=index, key=f"{key}:model")
    if model == "gpu_sim":
        st.caption("`gpu_sim` is a **simulated GPU** (labelled cost model); scheduler, queues, batching and metrics are the real server's.")
    return model


def config_panel(lab: Lab, model: str, key: str, knobs: Callable[[ModelSettings, str], ModelSettings]) -> None:
    """Knobs pre-filled from the model's current config, the diff, Apply and Undo."""
    if viewer_mode():
        st.info("Viewer mode: configuration changes are hidden.")
        return
    try:
        current = lab.config.current(model)
    except ConfigError as exc:
        st.error(str(exc))
        return
    version = hashlib.sha1(str(current).encode()).hexdigest()[:8]
    old = settings_of(current)
    new = knobs(old, f"{key}:{model}:{version}")
    proposed = set_settings(current, new)
    diff = lab.config.preview_diff(model, proposed)
    with st.expander("Config diff" + (" (pending change)" if diff else " (no change)"), expanded=bool(diff)):
        st.code(diff or "no change", language="diff")
    c1, c2 = st.columns(2)
    if c1.button("Apply", type="primary", disabled=not diff, key=f"{key}:apply", width="stretch"):
        _run(f"{key}:result", lambda: lab.apply(model, proposed, summarize_change(old, new)))
    if c2.button("Undo", key=f"{key}:undo", width="stretch"):
        _run(f"{key}:result", lambda: lab.undo(model))
    message = st.session_state.pop(f"{key}:result", None)
    if message:
        (st.success if message[0] == "ok" else st.error)(message[1])


def _run(result_key: str, action: Callable) -> None:
    """Run an apply/undo; keep its outcome for the rerun that redraws the widgets from the new config."""
    try:
        result = action()
    except ConfigError as exc:
        st.session_state[result_key] = ("error", f"Not applied — the model keeps serving its previous config.\n\n{exc}")
        return
    except Exception as exc:  # noqa: BLE001 - a dead server must not crash the page
        st.session_state[result_key] = ("error", f"Not applied: the server did not answer ({exc}).")
        return
    st.session_state[result_key] = ("ok", result.message)
    st.rerun()
