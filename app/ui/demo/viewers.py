"""Who is watching: demo viewers register on every refresh; the operator's pages count them."""
from __future__ import annotations

import threading
import time

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

SEEN_S = 15.0  # a viewer not refreshed for this long has left


@st.cache_resource
def _registry() -> tuple[threading.Lock, dict[str, float]]:
    return threading.Lock(), {}


def register_viewer() -> None:
    """Note that this browser session is watching the demo now."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    lock, seen = _registry()
    with lock:
        seen[ctx.session_id] = time.time()


def viewers(now: float | None = None) -> int:
    """Return how many demo viewers refreshed in the last SEEN_S seconds (forgetting the others)."""
    now = time.time() if now is None else now
    lock, seen = _registry()
    with lock:
        for session in [s for s, t in seen.items() if now - t > SEEN_S]:
            del seen[session]
        return len(seen)
