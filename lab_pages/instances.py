"""Instances: more runs at once, until the device saturates."""
from app.traffic import TrafficForm
from app.ui import concepts, knob_widgets
from app.ui.gpu import gpu_panel
from app.ui.page import concept_page

concept_page("instances", "Instances (instance_group)", concepts.INSTANCES, "gpu_sim", knob_widgets.instances,
             TrafficForm(model="gpu_sim", concurrency=16), panel=gpu_panel, autopilot=True)
