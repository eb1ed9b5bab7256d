"""Process-wide objects shared by every browser session."""
from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from app.lab import owner as lab_owner
from app.lab.ports import LabPort
from app.server.launcher import seal_process


def get_lab() -> LabPort:
    """Return the one Lab of this process (starts the embedded server on first use, with a spinner meanwhile).

    Not a st.cache_resource: any session may clear Streamlit's caches, and that must not build a second Lab.
    """
    lab = lab_owner.current()
    if lab is not None:
        return lab
    seal_process()  # the dashboard holds the operator token: the processes it starts may not read it back
    if get_script_run_ctx(suppress_warning=True) is None:  # a test or a script outside a page run: no spinner
        return lab_owner.get()
    with st.spinner("Starting the embedded tritonserver…"):
        return lab_owner.get()
