"""Who may change things: a local session on a loopback-bound dashboard; else only with the operator token, typed
once and exchanged for a flag in this session (app/access/gate.py decides; app/access/guess_limit.py slows guessing)."""
from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets

import streamlit as st

from app.access.gate import (HOSTS_ENV, TOKEN_ENV, Access, Request, allowed_hosts, decide, is_loopback, needs_tls_warning,
                      parse_hosts, safe_shown, token_problem)
from app.access.guess_limit import TokenExchange
from app.switches import switched_on
from app.ui.text import redacted

log = logging.getLogger(__name__)
INPUT_KEY = "tbl:operator_token_input"  # the widget: emptied by its callback (a late browser may still resend it)
UNLOCKED_KEY = "tbl:operator"  # the session's flag: True once the token was accepted (the token is not kept)
MESSAGE_KEY = "tbl:operator_message"
SESSION_KEY = "tbl:gate_session"
# A keyed digest of the last token compared in this session, never the text: a browser that has not drawn the emptied
# field yet sends the typed text again with its next rerun (a live fragment's), and that is not a new try
CHECKED_KEY = "tbl:operator_checked"
DIGEST_KEY = "tbl:operator_digest_key"
# one per process, not a st.cache_resource: any session may clear Streamlit's caches, and with them the counts
EXCHANGE = TokenExchange()
_said: set[str] = set()


def request() -> Request:
    """Return who asks: the bind address, the Host the browser named, the client's address, whether TLS is on."""
    headers = st.context.headers
    client = st.context.ip_address  # None for 127.0.0.1 and ::1 (Streamlit); a mock in script tests
    url = st.context.url or ""
    tls = bool(st.get_option("server.sslCertFile")) or url.startswith("https://") or \
        headers.get("X-Forwarded-Proto", "").lower() == "https"  # a TLS proxy in front
    return Request(bind=str(st.get_option("server.address") or ""), host=headers.get("Host"),
                   client=client if isinstance(client, str) else None, tls=tls)


def hosts(bind: str) -> tuple[str, ...]:
    """Return the names this dashboard may be operated by: loopback, the bind address, TBL_ALLOWED_HOSTS and
    Streamlit's server.allowedHosts (which refuses every other Host before any page runs)."""
    streamlit_names = [n for n in (st.get_option("server.allowedHosts") or []) if n != "*"]
    return allowed_hosts(bind, parse_hosts(os.environ.get(HOSTS_ENV)) + tuple(parse_hosts(",".join(streamlit_names))))


def access() -> Access:
    """Return this session's access."""
    asking = request()
    token = os.environ.get(TOKEN_ENV) or None
    problem = token_problem(token)
    if problem:
        _say_once("short token", problem)
    if not is_loopback(asking.bind) and not st.get_option("server.sslCertFile"):
        _say_once("no tls", f"dashboard served on {asking.bind or 'every interface'} without TLS: the operator "
                            "token crosses the network in clear unless a TLS proxy is in front (server.sslCertFile)")
    return decide(asking, hosts(asking.bind), _viewer(), token, bool(st.session_state.get(UNLOCKED_KEY)))


def can_operate() -> bool:
    """Return True when this session may apply, undo, restart and drive traffic."""
    return access().operate


def guarded(text: object) -> str:
    """Return a machine text (an error naming addresses, paths, process ids) whole for an operator, redacted for a
    session that may not operate."""
    return str(text) if can_operate() else redacted(text)


def token_prompt() -> None:
    """Once per page run (lab_or_stop calls it): where the token would unlock, ask for it; warn without TLS."""
    allowed, asking = access(), request()
    unlocked = bool(st.session_state.get(UNLOCKED_KEY)) and allowed.operate
    if (allowed.ask or unlocked) and needs_tls_warning(asking):
        st.sidebar.warning("Plain HTTP beyond loopback: the operator token would cross the network in clear. Serve "
                           "the dashboard with TLS (`--server.sslCertFile`/`--server.sslKeyFile`) or behind a TLS "
                           "proxy.")
    if unlocked:
        st.sidebar.caption("Operator: token accepted for this session.")
    if not allowed.ask:
        return
    held = EXCHANGE.refusal(_client(asking), _session())
    st.sidebar.text_input("Operator token", type="password", key=INPUT_KEY, on_change=_exchange,
                          help="Typed once: it is exchanged for an operator flag in this browser session and the "
                               "field is emptied.")
    message = st.session_state.get(MESSAGE_KEY)  # kept until the next token: a later rerun (a click, another
    if message:  # tab's job) would otherwise take the refusal away before it is read
        st.sidebar.error(message)
    elif held is not None:
        st.sidebar.error(f"Operator token: {held.reason}.")


def _exchange() -> None:
    """The token field's callback: empty the field, compare (unless held back), keep only the outcome."""
    typed = st.session_state.get(INPUT_KEY) or ""
    st.session_state[INPUT_KEY] = ""
    digest = _digest(typed) if typed else None
    if digest is not None and st.session_state.get(CHECKED_KEY) == digest:
        return  # the same text again, resent by the browser: compared already, its answer stands
    st.session_state.pop(MESSAGE_KEY, None)  # the last refusal goes with the next token typed
    token = os.environ.get(TOKEN_ENV) or ""
    if not typed or not token or token_problem(token):
        return
    asking = request()
    outcome = EXCHANGE.exchange(typed, token, _client(asking), _session())
    if outcome.checked:
        st.session_state[CHECKED_KEY] = digest
    who, host = safe_shown(asking.client) if asking.client else "a loopback client", safe_shown(asking.host or "none")
    if outcome.accepted:
        st.session_state[UNLOCKED_KEY] = True
        log.warning("operator token accepted from %s (Host %s)", who, host)
    else:
        st.session_state[MESSAGE_KEY] = f"Refused: {outcome.reason}."
        log.warning("refused operator token from %s (Host %s): %s", who, host, outcome.reason)


def _digest(typed: str) -> str:
    """Return typed's HMAC under this session's random key (what is kept of a compared token)."""
    key = st.session_state.setdefault(DIGEST_KEY, secrets.token_bytes(32))
    return hmac.new(key, typed.encode(), hashlib.sha256).hexdigest()


def _client(asking: Request) -> str:
    return asking.client or "loopback"


def _session() -> str:
    """Return this browser session's random id (the per-session count of wrong tokens)."""
    if SESSION_KEY not in st.session_state:
        st.session_state[SESSION_KEY] = secrets.token_hex(8)
    return st.session_state[SESSION_KEY]


def _say_once(what: str, message: str) -> None:
    if what not in _said:
        _said.add(what)
        log.warning("%s", message)


def _viewer() -> bool:
    return switched_on("TBL_VIEWER")
