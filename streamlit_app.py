"""Triton Batching Lab: one page per concept, all driving one live Triton server."""
from pathlib import Path
from urllib.parse import urlparse

import streamlit as st

# a local file: nothing on the page is fetched from the internet
st.set_page_config(page_title="Triton Batching Lab", page_icon=str(Path(__file__).parent / "app/ui/favicon.png"),
                   layout="wide")

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/home:", default=True),
    st.Page("pages/instances.py", title="Instances", icon=":material/stacks:"),
    st.Page("pages/dynamic_batching.py", title="Dynamic batching", icon=":material/inventory_2:"),
    st.Page("pages/sequence_batching.py", title="Sequence batching", icon=":material/link:"),
    st.Page("pages/priority.py", title="Priority & queue policy", icon=":material/traffic:"),
    st.Page("pages/three_batchings.py", title="The three batchings", icon=":material/call_split:"),
    st.Page("pages/diagnosis.py", title="Latency breakdown & diagnosis", icon=":material/monitor_heart:"),
    st.Page("pages/experiments.py", title="Experiments", icon=":material/science:"),
    st.Page("pages/demo.py", title="Demo (read-only)", icon=":material/slideshow:", url_path="demo"),
]

# the demo URL (/demo) shows the operator's lab with no navigation and no controls
demo = urlparse(st.context.url or "").path.rstrip("/").endswith("/demo")
st.navigation(PAGES, position="hidden" if demo else "sidebar").run()
