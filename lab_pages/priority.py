"""Priority levels and queue policy: mixed traffic on one model."""
from app.traffic import TrafficForm
from app.ui import concepts, knob_widgets
from app.ui.page import concept_page

concept_page("priority", "Priority & queue policy", concepts.PRIORITY, "gpu_sim", knob_widgets.priority,
             TrafficForm(model="gpu_sim", mode="open", rate=600, mix="interactive + batch", sla_ms=30), per_class=True)
