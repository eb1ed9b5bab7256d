"""Page scaffolding: the server banner, the model picker and the config panel with Apply and Undo."""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app.config.apply import config_version
from app.config.edits import set_settings
from app.config.errors import (ConfigError, ConfigRolledBackError, ContractChangeError, StaleConfigError, clean)
from app.config.read import settings_of
from app.config.settings import ModelSettings
from app.knobs import summarize_change
from app.lab import Lab
from app.server.errors import ServerStartError
from app.ui.editor import raw_editor
from app.ui.access import access, token_prompt
from app.ui.state import get_lab


def lab_or_stop(prompt: bool = True) -> Lab:
    """Return the shared Lab, or show why the server is not there and stop the page (prompt: the token field)."""
    if prompt:
        token_prompt()
    try:
        lab = get_lab()
    except (ServerStartError, OSError, ValueError) as exc:
        st.error(f"The Triton server could not be started or reached.\n\n```\n{exc}\n```")
        if st.button("Try again"):
            st.rerun()
        st.stop()
    _server_banner(lab)
    return lab


@st.fragment(run_every=3.0)
def _server_banner(lab: Lab) -> None:
    """Say that the server does not answer — and stop saying it once it does (it refreshes itself)."""
    status = lab.metrics.snapshot(model=None, window_s=5)
    if not status.up and status.error != "waiting for the first scrape":
        st.warning(f"Server not answering: {status.error or 'down'} — charts resume when it is back.")


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
    """Knobs pre-filled from the model's current config, the diff, Apply and Undo, and the raw editor."""
    allowed = access()
    if not allowed.operate:
        st.info(f"Read-only: {allowed.reason}.")
        return
    try:
        text = lab.config.current_text(model)
        current = lab.config.current(model)
    except ConfigError as exc:
        st.error(str(exc))
        return
    version = config_version(text)  # what an Apply is built from: refused if another one lands first
    old = settings_of(current)
    new = knobs(old, f"{key}:{model}:{version}")
    proposed = set_settings(current, new)
    diff = lab.config.preview_diff(model, proposed)
    with st.expander("Config diff" + (" (pending change)" if diff else " (no change)"), expanded=bool(diff)):
        st.code(diff or "no change", language="diff")
    blocked = lab.config.undo_blocked(model)
    c1, c2 = st.columns(2)
    if c1.button("Apply", type="primary", disabled=not diff, key=f"{key}:apply", width="stretch"):
        run_apply(f"{key}:result", lambda confirm: lab.apply(model, proposed, summarize_change(old, new), base=version,
                                                             confirm_contract=confirm))
    if c2.button("Undo", key=f"{key}:undo", width="stretch", disabled=blocked is not None,
                 help=blocked or "bring back the config that served before the last change"):
        run_apply(f"{key}:result", lambda confirm: lab.undo(model))
    if lab.config.control.transport.name != "grpc":
        st.caption(f"Applies reach this server over HTTP ({lab.config.control.transport.why}): Triton runs an HTTP "
                   "load on an HTTP worker thread, so HTTP traffic sharing that worker waits until the load ends.")
    show_outcome(f"{key}:result")
    raw_editor(lab, model, key, text, version)


def run_apply(result_key: str, action: Callable[[bool], object], confirm: bool = False) -> None:
    """Run an apply or undo; keep its outcome (or the contract question) for the rerun that redraws the knobs."""
    try:
        result = action(confirm)
    except ContractChangeError as exc:
        st.session_state[result_key] = ("confirm", exc, action)
        return
    except StaleConfigError as exc:
        st.session_state[result_key] = ("error", f"Not applied — {exc}")
        st.rerun()
    except ConfigRolledBackError as exc:
        st.session_state[result_key] = ("error", f"Rolled back — {exc}")
        st.rerun()
    except ConfigError as exc:
        st.session_state[result_key] = ("error", f"Not applied — {exc}")
        return
    except Exception as exc:  # noqa: BLE001 - a dead server must not crash the page
        st.session_state[result_key] = ("error", f"Not applied: the server did not answer ({clean(str(exc))}).")
        return
    st.session_state[result_key] = ("ok", result.message)
    st.rerun()


def show_outcome(result_key: str) -> None:
    """Show the last apply's outcome; for a contract change, the changes and a button to confirm them."""
    outcome = st.session_state.get(result_key)
    if not outcome:
        return
    if outcome[0] != "confirm":
        st.session_state.pop(result_key, None)
        (st.success if outcome[0] == "ok" else st.error)(outcome[1])
        return
    _, exc, action = outcome
    st.warning("**This changes the model's contract with its clients** — requests built for the old config may "
               "fail:\n\n" + "\n".join(f"- {c}" for c in exc.changes))
    c1, c2 = st.columns(2)
    if c1.button("Apply anyway: I accept the contract change", key=f"{result_key}:confirm"):
        st.session_state.pop(result_key, None)
        run_apply(result_key, action, confirm=True)
        show_outcome(result_key)
    elif c2.button("Cancel", key=f"{result_key}:cancel"):
        st.session_state.pop(result_key, None)
        st.rerun()
