"""Triton Batching Lab: one page per concept, all driving one live Triton server."""
import streamlit as st

st.set_page_config(page_title="Triton Batching Lab", page_icon="⚙️", layout="wide")

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon="🏠", default=True),
    st.Page("pages/instances.py", title="Instances", icon="🧩"),
    st.Page("pages/dynamic_batching.py", title="Dynamic batching", icon="📦"),
    st.Page("pages/sequence_batching.py", title="Sequence batching", icon="🔗"),
    st.Page("pages/priority.py", title="Priority & queue policy", icon="🚦"),
    st.Page("pages/three_batchings.py", title="The three batchings", icon="🔀"),
    st.Page("pages/diagnosis.py", title="Latency breakdown & diagnosis", icon="🩺"),
    st.Page("pages/experiments.py", title="Experiments", icon="🧪"),
]

st.navigation(PAGES).run()
