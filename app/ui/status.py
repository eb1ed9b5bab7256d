"""The server status panel: version, URL, each model's state, restart."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.lab import Lab


def server_panel(lab: Lab, allow_restart: bool = True) -> None:
    """Show the server's version, addresses, backend and models; offer a restart of a server the lab started."""
    status = lab.status()
    backend = lab.backend
    kind = lab.server.describe() if lab.server is not None else "remote (TRITON_URL)"
    c1, c2, c3 = st.columns(3)
    c1.metric("Server", "ready" if status.ready else ("up" if status.up else "down"))
    c2.metric("Triton version", status.version or "—")
    c3.metric("Backend", backend)
    st.markdown(f"**{kind}** — HTTP `{lab.endpoint.http_url}` · gRPC `{lab.endpoint.grpc_url}` · metrics `{lab.endpoint.metrics_url}`")
    if not status.up:
        st.error(status.error)
        if lab.server is not None:
            st.code(lab.server.log_tail(), language="text")
    else:
        frame = pd.DataFrame([{"model": m.name, "version": m.version, "state": m.state, "reason": m.reason}
                              for m in status.models])
        st.dataframe(frame, hide_index=True, width="stretch")
    if backend == "docker":
        with st.expander("Container log (last 40 lines, refreshed every 2 s)"):
            container_log(lab)
    if lab.embedded and allow_restart:
        restart_control(lab)


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
