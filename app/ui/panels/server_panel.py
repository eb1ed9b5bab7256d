"""The server status panel: version, URL, model control (can the lab apply, and where it writes), where the
figures come from, each model's state with Triton's reason, restart.

A session that may not operate (viewer mode, /demo beyond loopback, no token) sees no addresses, paths, process ids
or logs: machine texts go through redacted() and the log tails are the operator's.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.lab.ports import LabPort
from app.metrics.stats_source import STATISTICS
from app.server.control_mode import ControlMode
from app.server.status import ServerStatus
from app.ui.access import can_operate
from app.ui.text import redacted


def server_panel(lab: LabPort, allow_restart: bool = True, control_mode: ControlMode | None = None) -> None:
    """Show the server's version, addresses, backend, model control, figures' source and models; offer a restart of
    a server the lab started."""
    status = lab.status()
    facts = lab.server_facts()
    backend, endpoint = facts.backend, facts.endpoint
    operator = can_operate()
    mode = control_mode or facts.control
    kind = facts.description if facts.embedded else "remote (TRITON_URL)"
    if not operator:  # the description names the process id or the container
        kind = f"the lab's own tritonserver ({backend})" if facts.embedded else "remote (TRITON_URL)"
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Server", "ready" if status.ready else ("up" if status.up else "down"))
    c2.metric("Triton version", status.version or "—")
    c3.metric("Backend", backend)
    c4.metric("Model control", mode.mode)
    if operator:
        st.markdown(f"**{kind}** — HTTP `{endpoint.http_url}` · gRPC `{endpoint.grpc_url}` · "
                    f"metrics `{endpoint.metrics_url}`")
    else:
        st.markdown(f"**{kind}** — its addresses, paths and logs are shown to the operator only.")
    if not status.up:
        st.error(status.error if operator else redacted(status.error))
        if facts.embedded and operator:
            st.code(lab.server_log(), language="text")
    else:
        if status.error:  # up, but something could not be asked (a locked repository index: the key is missing)
            st.warning(status.error if operator else redacted(status.error))
        models_table(status, operator)
    control_panel(mode, facts.repository, operator)
    figures_source(lab, operator)
    if backend == "docker" and operator:
        with st.expander("Container log (last 40 lines, refreshed every 2 s)"):
            container_log(lab)
    if facts.embedded and allow_restart:
        restart_control(lab)


def models_table(status: ServerStatus, operator: bool = True) -> None:
    """Every model with its version, state and Triton's reason; the ones that do not serve first, reasons in full
    (Triton's reasons name files: without them for a session that may not operate)."""
    models = status.by_attention()
    shown = (lambda text: text) if operator else (lambda text: redacted(text) if text else text)
    frame = pd.DataFrame([{"model": m.name, "version": m.version, "state": m.shown_state, "reason": shown(m.reason)}
                          for m in models], columns=["model", "version", "state", "reason"])
    st.dataframe(frame, hide_index=True, width="stretch")
    for m in models:
        if m.ready:
            break
        version = f" (version {m.version})" if m.version else ""
        st.warning(f"`{m.name}`{version} is {m.shown_state}: {shown(m.reason)}" if m.reason else
                   f"`{m.name}`{version} is {m.shown_state}; Triton gives no reason (see the server log).")


def control_panel(mode: ControlMode, repo, operator: bool = True) -> None:
    """How configs reach the server, how that was found, whether Apply works (else why and the flag), where the
    lab writes (the paths, process ids and addresses for the operator only)."""
    shown = (lambda text: text) if operator else redacted
    how = {"explicit": "Apply reloads a model through Triton's load API",
           "poll": "Apply writes config.pbtxt and waits for the server's repository poll"
                   + (f" (every {mode.poll_s:g} s)" if mode.poll_s else ""),
           "none": "the server loads models only at start",
           "unknown": "the lab could not tell how this server takes config changes"}.get(mode.mode, mode.mode)
    st.markdown(f"**Model control: {mode.mode}** — {how}.")
    st.caption(f"How the lab knows: {shown(mode.how)}.")
    blocked = mode.why_not
    if blocked is None and mode.mode == "poll" and repo is None:  # until the lab adopts the folder it found
        blocked = (f"the server polls `{mode.repository}`, but the lab writes no repository: set "
                   "TRITON_MODEL_REPOSITORY to it" if mode.repository else
                   "the server polls a repository the lab does not write: set TRITON_MODEL_REPOSITORY to it")
    if blocked is None:
        st.success("The lab can apply config changes to this server.")
    else:
        st.warning(f"Apply is off: {shown(blocked)}.")
    if mode.warning:
        st.warning(shown(mode.warning) + ".")
    if repo is not None:
        where = f"`{repo}`" if operator else "a folder on the lab's machine"
        st.markdown(f"Repository the lab writes: {where} (config.pbtxt of each model, with its history).")
    elif mode.mode == "explicit":
        served = f"`{mode.repository}`" if operator else "a folder"
        found = f" The server serves {served}: set TRITON_MODEL_REPOSITORY to it to keep them." \
            if mode.repository is not None else ""
        st.markdown("Repository the lab writes: **none** — changes last until the server restarts." + found)
    else:
        st.markdown("Repository the lab writes: **none**.")


def figures_source(lab: LabPort, operator: bool = True) -> None:
    """Where the server figures come from: /metrics, or the statistics API standing in (and what that lacks)."""
    shown = (lambda text: text) if operator else redacted
    snap = lab.server_view(model=None, window_s=5)
    source = getattr(snap, "source", None)
    if source == STATISTICS:
        missing = ", ".join(getattr(snap, "missing", ()))
        note = getattr(snap, "source_note", None)
        st.warning("Server figures come from the **statistics API**: /metrics does not answer"
                   + (f" ({shown(note)})" if note else "") + f". Missing without it: {missing}. "
                   "Set TRITON_METRICS_URL to the server's metrics address (port 8002 by default) to have them.")
    elif source is not None:
        where = f" (`{lab.server_facts().endpoint.metrics_url}`)" if operator else ""
        st.markdown(f"Server figures come from **/metrics**{where}, batch sizes from the statistics API.")
    else:
        st.markdown("Server figures: " + (shown(snap.error) if snap.error else "waiting for the first scrape") + ".")


@st.fragment(run_every=2.0)
def container_log(lab: LabPort) -> None:
    """The Triton container's log as it grows (for the operator only)."""
    st.code(lab.server_log(40) if lab.server_facts().embedded and can_operate() else "", language="text")


def restart_control(lab: LabPort) -> None:
    """Restart the embedded server after a confirmation that says what stops; optionally resume the traffic."""
    if st.button(f"Restart the {lab.server_facts().backend} server", key="restart-server"):
        st.session_state["restart:ask"] = True
    if not st.session_state.get("restart:ask"):
        return
    running = lab.traffic().running
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
