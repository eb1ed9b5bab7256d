"""Overview: the server, how it takes config changes, its models, and where to start."""
import streamlit as st

from app.ui.page import concepts
from app.ui.page.layout import header, lab_or_stop
from app.ui.access import can_operate
from app.ui.panels.server_panel import server_panel
from app.ui.traffic.traffic_panel import traffic_status

lab = lab_or_stop()
header("Triton Batching Lab", concepts.OVERVIEW, expanded=True)
server_panel(lab, allow_restart=can_operate())
st.subheader("Traffic")
traffic_status(lab, lab.traffic().running)
st.subheader("Where to start")
st.markdown("""
Every page works on any model the server serves: pick it in the page's model selector (models that are not READY
are listed too, with Triton's reason). The traffic form builds requests from the model's own inputs; the knobs
start from the config it serves.

1. **Latency breakdown & diagnosis** — start traffic to your model and read whether p99 is waiting or compute.
2. **Dynamic batching** — on a model with `max_batch_size` above 0, raise `max_queue_delay_microseconds` and watch
   batches grow and p99 follow.
3. **Instances** — go from 1 to 2 to more instances of your model and find where throughput flattens.
4. **Priority & queue policy** — mix interactive and batch traffic and keep the interactive p99.
5. **Sequence batching** — keep a stateful model's answers right, then break them on purpose.

The guided scenarios measure claims on the lab's own models (`gpu_sim`, a simulated GPU; `stream_acc`,
`token_sim`, `mlp`); when your server does not serve them, the lab runs them on a server of its own beside yours.
""")
