"""The server status panel: version, URL, model control (can the lab apply, and where it writes), where the
figures come from, each model's state with Triton's reason, restart."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.lab import Lab
from app.metrics.stats_source import STATISTICS
from app.server.control_mode import ControlMode, detect
from app.server.status import ServerStatus


def server_panel(lab: Lab, allow_restart: bool = True, control_mode: ControlMode | None = None) -> None:
    """Show the server's version, addresses, backend, model control, figures' source and models; offer a restart of
    a server the lab started."""
    status = lab.status()
    backend = lab.backend
    mode = control_mode or getattr(lab, "control_mode", None) or detect(lab.endpoint, lab.repo)
    kind = lab.server.describe() if lab.server is not None else "remote (TRITON_URL)"
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Server", "ready" if status.ready else ("up" if status.up else "down"))
    c2.metric("Triton version", status.version or "—")
    c3.metric("Backend", backend)
    c4.metric("Model control", mode.mode)
    st.markdown(f"**{kind}** — HTTP `{lab.endpoint.http_url}` · gRPC `{lab.endpoint.grpc_url}` · "
                f"metrics `{lab.endpoint.metrics_url}`")
    if not status.up:
        st.error(status.error)
        if lab.server is not None:
            st.code(lab.server.log_tail(), language="text")
    else:
        models_table(status)
    control_panel(mode, lab.repo)
    figures_source(lab)
    if backend == "docker":
        with st.expander("Container log (last 40 lines, refreshed every 2 s)"):
            container_log(lab)
    if lab.embedded and allow_restart:
        restart_control(lab)


def models_table(status: ServerStatus) -> None:
    """Every model with its version, state and Triton's reason; the ones that do not serve first, reasons in full."""
    models = status.by_attention()
    frame = pd.DataFrame([{"model": m.name, "version": m.version, "state": m.shown_state, "reason": m.reason}
                          for m in models], columns=["model", "version", "state", "reason"])
    st.dataframe(frame, hide_index=True, width="stretch")
    for m in models:
        if m.ready:
            break
        version = f" (version {m.version})" if m.version else ""
        st.warning(f"`{m.name}`{version} is {m.shown_state}: {m.reason}" if m.reason else
                   f"`{m.name}`{version} is {m.shown_state}; Triton gives no reason (see the server log).")


def control_panel(mode: ControlMode, repo) -> None:
    """How configs reach the server, how that was found, whether Apply works (else why and the flag), where the
    lab writes."""
    how = {"explicit": "Apply reloads a model through Triton's load API",
           "poll": "Apply writes config.pbtxt and waits for the server's repository poll"
                   + (f" (every {mode.poll_s:g} s)" if mode.poll_s else ""),
           "none": "the server loads models only at start",
           "unknown": "the lab could not tell how this server takes config changes"}.get(mode.mode, mode.mode)
    st.markdown(f"**Model control: {mode.mode}** — {how}.")
    st.caption(f"How the lab knows: {mode.how}.")
    blocked = mode.why_not
    if blocked is None and mode.mode == "poll" and repo is None:  # until the lab adopts the folder it found
        blocked = (f"the server polls `{mode.repository}`, but the lab writes no repository: set "
                   "TRITON_MODEL_REPOSITORY to it" if mode.repository else
                   "the server polls a repository the lab does not write: set TRITON_MODEL_REPOSITORY to it")
    if blocked is None:
        st.success("The lab can apply config changes to this server.")
    else:
        st.warning(f"Apply is off: {blocked}.")
    if mode.warning:
        st.warning(mode.warning + ".")
    if repo is not None:
        st.markdown(f"Repository the lab writes: `{repo}` (config.pbtxt of each model, with its history).")
    elif mode.mode == "explicit":
        found = f" The server serves `{mode.repository}`: set TRITON_MODEL_REPOSITORY to it to keep them." \
            if mode.repository is not None else ""
        st.markdown("Repository the lab writes: **none** — changes last until the server restarts." + found)
    else:
        st.markdown("Repository the lab writes: **none**.")


def figures_source(lab: Lab) -> None:
    """Where the server figures come from: /metrics, or the statistics API standing in (and what that lacks)."""
    snap = lab.metrics.snapshot(model=None, window_s=5)
    source = getattr(snap, "source", None)
    if source == STATISTICS:
        missing = ", ".join(getattr(snap, "missing", ()))
        note = getattr(snap, "source_note", None)
        st.warning("Server figures come from the **statistics API**: /metrics does not answer"
                   + (f" ({note})" if note else "") + f". Missing without it: {missing}. "
                   "Set TRITON_METRICS_URL to the server's metrics address (port 8002 by default) to have them.")
    elif source is not None:
        st.markdown(f"Server figures come from **/metrics** (`{lab.endpoint.metrics_url}`), batch sizes from the "
                    "statistics API.")
    else:
        st.markdown("Server figures: " + (snap.error or "waiting for the first scrape") + ".")


@st.fragment(run_every=2.0)
def container_log(lab: Lab) -> None:
    """The Triton container's log as it grows."""
    st.code(lab.server.log_tail(40) if lab.server is not None else "", language="text")


def restart_control(lab: Lab) -> None:
    """Restart the embedded server after a confirmation that says what stops; optionally resume the traffic."""
    if st.button(f"Restart the {lab.backend} server", key="restart-server"):
        st.session_state["restart:ask"] = True
    if not st.session_state.get("restart:ask"):
        return
    running = lab.load.running
    st.warning("Restarting stops every model for a few seconds" +
               (" and **stops the running traffic**." if running else ".") + " The charts keep their history.")
    c1, c2, c3 = st.columns(3)
    go = c1.button("Restart", type="primary", key="restart:go")
    resume = c2.button("Restart and resume the traffic", key="restart:resume", disabled=not running)
    if c3.button("Cancel", key="restart:cancel"):
        st.session_state.pop("restart:ask", None)
        st.rerun()
    if go or resume:
        st.session_state.pop("restart:ask", None)
        with st.spinner("Restarting tritonserver…"):
            try:
                lab.restart(resume_traffic=resume)
            except Exception as exc:  # noqa: BLE001 - shown, not crashed on
                st.error(f"Restart failed: {exc}")
            else:
                st.success("Server restarted" + (", traffic resumed." if resume else "."))
