"""Dynamic batching: one bigger run, paid for with waiting."""
from app.traffic.form import TrafficForm
from app.ui.page import concepts
from app.ui.configure import knob_widgets
from app.ui.page.concept_page import concept_page

concept_page("dynamic", "Dynamic batching", concepts.DYNAMIC, "gpu_sim", knob_widgets.dynamic,
             TrafficForm(model="gpu_sim", concurrency=16), autopilot=True)
