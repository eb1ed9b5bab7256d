"""Page scaffolding: the server banner, the model picker and the config panel with Apply and Undo."""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app.config.apply import config_version
from app.config.edits import set_settings
from app.config.ensembles import tuned_at_its_steps
from app.config.errors import ConfigError
from app.config.read import settings_of
from app.config.settings import ModelSettings
from app.experiments.report.environment import simulated
from app.config.knobs import summarize_change
from app.lab.ports import LabPort
from app.server.start_errors import ServerStartError
from app.ui.configure.apply_outcome import run_apply, show_outcome
from app.ui.configure.editor import raw_editor
from app.ui.access import access, can_operate, token_prompt
from app.ui.demo.presenter import presenter_panel
from app.ui.text import redacted
from app.ui.state import get_lab
from app.ui.panels.whatif_panel import predicted_at_apply, whatif_panel


def lab_or_stop(prompt: bool = True) -> LabPort:
    """Return the shared Lab, or show why the server is not there and stop the page (prompt: the token field)."""
    if prompt:
        token_prompt()
    try:
        lab = get_lab()
    except (ServerStartError, OSError, ValueError) as exc:
        shown = str(exc) if can_operate() else redacted(str(exc))
        st.error(f"The Triton server could not be started or reached.\n\n```\n{shown}\n```")
        if st.button("Try again"):
            st.rerun()
        st.stop()
    _server_banner(lab)
    if prompt and can_operate():  # an operator's page chooses what /demo shows (/demo calls with prompt=False)
        with st.sidebar.expander(":material/slideshow: What /demo shows"):
            presenter_panel(lab)
    return lab


@st.fragment(run_every=3.0)
def _server_banner(lab: LabPort) -> None:
    """Say that the server does not answer — and stop saying it once it does (it refreshes itself)."""
    status = lab.server_view(model=None, window_s=5)
    if not status.up and status.error != "waiting for the first scrape":
        error = status.error or "down"
        st.warning(f"Server not answering: {error if can_operate() else redacted(error)} — charts resume when it "
                   "is back.")


def header(title: str, concept: str, expanded: bool = False) -> None:
    """Title plus the concept explanation."""
    st.title(title)
    with st.expander("The idea, and what to look for", expanded=expanded):
        st.markdown(concept)


def model_picker(lab: LabPort, preferred: str, key: str, allowed: tuple[str, ...] | None = None) -> str:
    """Select box of every model of the server, each with its state; a model that is not READY can be chosen to
    see why (Triton's reason) and to fix its config. Prefers `preferred`, else the first READY model."""
    status = lab.status()  # never raises
    states = {m.name: m for m in status.models}
    names = sorted(states) or [preferred]
    if allowed:
        names = [n for n in names if n in allowed] or list(allowed)
    ready = [n for n in names if states.get(n) is not None and states[n].state == "READY"]
    default = preferred if preferred in ready else (ready[0] if ready else (preferred if preferred in names else names[0]))

    def shown(name: str) -> str:
        state = states.get(name)
        return name if state is None or state.state == "READY" else f"{name} — {state.state or 'not loaded'}"

    model = st.selectbox("Model", names, index=names.index(default), key=f"{key}:model", format_func=shown)
    state = states.get(model)
    if state is not None and state.state != "READY":
        reason = state.reason if can_operate() else redacted(state.reason)
        why = f": {reason}" if reason else " (Triton gives no reason; see the server log on Overview)"
        st.warning(f"`{model}` is {state.state or 'not loaded'}{why}. Its config.pbtxt can still be edited and "
                   "applied below; traffic to it fails until it loads.")
    elif state is not None and simulated_model(lab, model):
        st.caption(f"`{model}` is a **simulated device** (a labelled cost model); scheduler, queues, batching and "
                   "metrics are the real server's.")
    return model


def simulated_model(lab: LabPort, model: str) -> bool:
    """Return True for a model whose config says it is the lab's cost model (the same test the reports use)."""
    try:
        return bool(simulated(lab.served_text(model)))
    except Exception:  # noqa: BLE001 - a model that cannot be read is not labelled
        return False


def config_panel(lab: LabPort, model: str, key: str, knobs: Callable[[ModelSettings, str], ModelSettings]) -> None:
    """Knobs pre-filled from the config the model serves, the diff of config.pbtxt, Apply and Undo, the raw editor."""
    allowed = access()
    if not allowed.operate:
        st.info(f"Read-only: {allowed.reason}.")
        return
    try:
        text = lab.served_text(model)
        current = lab.served_config(model)
        old = settings_of(current)
    except ConfigError as exc:
        st.error(str(exc))
        return
    version = config_version(text)  # what an Apply is built from: refused if another one lands first
    steps = tuned_at_its_steps(model, current)
    if steps:  # knobs here could only be refused by Triton (an instance_group) or mean nothing (a queue)
        st.caption(f"No knobs here: {steps} (the buttons above). Its config.pbtxt can still be edited below.")
    new = old if steps else knobs(old, f"{key}:{model}:{version}")
    plan = None
    if new != old:  # nothing moved: nothing to propose (never a diff made of layout or of Triton's defaults)
        try:
            proposed = set_settings(current, new)
            plan = lab.plan(model, proposed)
        except ConfigError as exc:
            st.error(f"This change cannot be applied: {exc}")
    diff = plan.diff if plan is not None else ""
    with st.expander("Config diff" + (" (pending change)" if diff else " (no change)"), expanded=bool(diff)):
        st.code(diff or "no change", language="diff")
        if plan is not None and plan.new_file:
            st.caption(f"`{model}` has no config.pbtxt (Triton auto-completes its config): this Apply writes a "
                       "complete one — the config it serves now, with this change.")
        elif plan is not None and plan.canonical:
            st.caption("config.pbtxt could not be edited in place: Apply rewrites it in canonical form.")
    prediction = None if steps else whatif_panel(lab, model, old, new if plan is not None else None, key)
    for problem in lab.history_problems(model):
        st.warning(f"The config history of `{model}` has a version that cannot be read and is skipped: {problem}")
    blocked = lab.undo_blocked(model)
    cannot = lab.apply_blocked()
    if cannot:
        st.info(f"Apply is off: {cannot}. Everything else on this page works.")
    c1, c2 = st.columns(2)
    if c1.button("Apply", type="primary", disabled=not diff or bool(cannot), key=f"{key}:apply", width="stretch"):
        run_apply(f"{key}:result", lambda confirm: _noted(
            lab, model, predicted_at_apply(lab, model, new, prediction),  # before the change
            lab.apply(model, proposed, summarize_change(old, new), base=version, confirm_contract=confirm)))
    if c2.button("Undo", key=f"{key}:undo", width="stretch", disabled=blocked is not None or bool(cannot),
                 help=blocked or "bring back the config that served before the last change"):
        run_apply(f"{key}:result", lambda confirm: lab.undo(model))
    route = lab.apply_route()
    if route.mode == "explicit" and route.transport != "grpc":
        st.caption(f"Applies reach this server over HTTP ({route.why}): Triton runs an HTTP "
                   "load on an HTTP worker thread, so HTTP traffic sharing that worker waits until the load ends.")
    show_outcome(f"{key}:result")
    raw_editor(lab, model, key, text, version)


def _noted(lab: LabPort, model: str, prediction, result):
    """Keep the twin's prediction with the change just applied (measured once the change has shown); return result."""
    if prediction is not None:
        lab.note_prediction(model, prediction)
    return result
