"""Triton Batching Lab: one page per concept, all driving one live Triton server."""
from pathlib import Path
from urllib.parse import urlparse

import streamlit as st

# a local file: nothing on the page is fetched from the internet
st.set_page_config(page_title="Triton Batching Lab", page_icon=str(Path(__file__).parent / "app/ui/favicon.png"),
                   layout="wide")

# The page scripts live in lab_pages/, never in a folder named pages/ beside this script: Streamlit would then
# start every process in its file-based navigation, and a first session opening a deep link (/demo) would never
# run this script, leaving file names for navigation to every later session (tests/smoke/test_entry.py).
PAGES = [
    st.Page("lab_pages/overview.py", title="Overview", icon=":material/home:", default=True),
    st.Page("lab_pages/instances.py", title="Instances", icon=":material/stacks:"),
    st.Page("lab_pages/dynamic_batching.py", title="Dynamic batching", icon=":material/inventory_2:"),
    st.Page("lab_pages/sequence_batching.py", title="Sequence batching", icon=":material/link:"),
    st.Page("lab_pages/priority.py", title="Priority & queue policy", icon=":material/traffic:"),
    st.Page("lab_pages/three_batchings.py", title="The three batchings", icon=":material/call_split:"),
    st.Page("lab_pages/diagnosis.py", title="Latency breakdown & diagnosis", icon=":material/monitor_heart:"),
    st.Page("lab_pages/experiments.py", title="Experiments", icon=":material/science:"),
    st.Page("lab_pages/demo.py", title="Demo (read-only)", icon=":material/slideshow:", url_path="demo"),
]

# the demo URL (/demo) shows the operator's lab with no navigation and no controls
demo = urlparse(st.context.url or "").path.rstrip("/").endswith("/demo")
st.navigation(PAGES, position="hidden" if demo else "sidebar").run()
