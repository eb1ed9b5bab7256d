"""Process-wide objects shared by every browser session."""
from __future__ import annotations

import streamlit as st

from app.lab import Lab


@st.cache_resource(show_spinner="Starting the embedded tritonserver…")
def get_lab() -> Lab:
    """Return the one Lab of this process (starts the embedded server on first use)."""
    return Lab.create()
