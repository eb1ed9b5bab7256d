"""Instances: more runs at once, until the device saturates."""
from app.traffic.form import TrafficForm
from app.ui.page import concepts
from app.ui.configure import knob_widgets
from app.ui.panels.gpu_panel import gpu_panel
from app.ui.page.concept_page import concept_page

concept_page("instances", "Instances (instance_group)", concepts.INSTANCES, "gpu_sim", knob_widgets.instances,
             TrafficForm(model="gpu_sim", concurrency=16), panel=gpu_panel, autopilot=True)
