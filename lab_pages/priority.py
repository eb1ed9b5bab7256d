"""Priority levels and queue policy: mixed traffic on one model."""
from app.traffic.form import TrafficForm
from app.ui.page import concepts
from app.ui.configure import knob_widgets
from app.ui.page.concept_page import concept_page

concept_page("priority", "Priority & queue policy", concepts.PRIORITY, "gpu_sim", knob_widgets.priority,
             TrafficForm(model="gpu_sim", mode="open", rate=600, mix="interactive + batch", sla_ms=30), per_class=True)
