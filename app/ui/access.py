"""Who may change things: anyone on a loopback-bound dashboard; beyond it, only with the operator token."""
from __future__ import annotations

import hmac
import logging
import os
from dataclasses import dataclass

import streamlit as st

log = logging.getLogger(__name__)
LOOPBACK = ("127.0.0.1", "localhost", "::1")
TOKEN_ENV = "TBL_OPERATOR_TOKEN"


@dataclass(frozen=True)
class Access:
    """What this browser session may do, and why."""

    operate: bool
    reason: str


def decide(address: str, viewer: bool, token: str | None, given: str | None) -> Access:
    """Return the access of a session: viewer mode and a non-loopback bind need the operator token."""
    if viewer:
        return Access(False, "viewer mode (TBL_VIEWER): configuration and traffic controls are hidden")
    if address in LOOPBACK:
        return Access(True, "bound to 127.0.0.1: anyone on this machine may operate")
    if not token:
        return Access(False, f"served on {address} without {TOKEN_ENV}: read-only for everyone "
                             f"(restart with {TOKEN_ENV} set to operate)")
    if given and hmac.compare_digest(given.encode(), token.encode()):
        return Access(True, f"served on {address}: operator token accepted")
    return Access(False, f"served on {address}: enter the operator token in the sidebar to operate")


def bind_address() -> str:
    """Return the address Streamlit serves on."""
    return str(st.get_option("server.address") or "")


def token_prompt() -> None:
    """Once per page run (lab_or_stop calls it): beyond loopback, ask for the operator token; log refusals."""
    address, token = bind_address(), os.environ.get(TOKEN_ENV) or None
    if _viewer() or address in LOOPBACK or not token:
        return
    typed = st.sidebar.text_input("Operator token", type="password", key="operator_token_input")
    if typed and typed != st.session_state.get("operator_token"):
        if hmac.compare_digest(typed.encode(), token.encode()):
            st.session_state["operator_token"] = typed
        else:
            log.warning("refused operator token from a browser session (address %s)", address)
            st.sidebar.error("Wrong operator token: read-only.")


def access() -> Access:
    """Return this session's access."""
    return decide(bind_address(), _viewer(), os.environ.get(TOKEN_ENV) or None,
                  st.session_state.get("operator_token"))


def can_operate() -> bool:
    """Return True when this session may apply, undo, restart and drive traffic."""
    return access().operate


def _viewer() -> bool:
    return os.environ.get("TBL_VIEWER", "").strip().lower() in ("1", "true", "yes", "on")
