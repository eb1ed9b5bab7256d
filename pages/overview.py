"""Overview: the server, its models, and where to start."""
import streamlit as st

from app.ui import concepts
from app.ui.layout import header, lab_or_stop
from app.ui.access import can_operate
from app.ui.status import server_panel
from app.ui.traffic import traffic_status

lab = lab_or_stop()
header("Triton Batching Lab", concepts.OVERVIEW, expanded=True)
server_panel(lab, allow_restart=can_operate())
st.subheader("Traffic")
traffic_status(lab, lab.load.running)
st.subheader("Where to start")
st.markdown("""
1. **Latency breakdown & diagnosis** — start traffic and read whether p99 is waiting or compute.
2. **Dynamic batching** — raise `max_queue_delay_microseconds` and watch batches grow and p99 follow.
3. **Instances** — go from 1 to 2 to 8 instances of the simulated GPU and find where throughput flattens.
4. **Priority & queue policy** — mix interactive and batch traffic and keep the interactive p99.
5. **Sequence batching** — keep a stateful model's sums right, then break them on purpose.
""")
