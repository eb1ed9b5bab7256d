"""Latency breakdown & diagnosis: is p99 waiting or compute, and which pattern is it?"""
from app.lab.ports import LabPort
from app.traffic.form import TrafficForm
from app.ui.page import concepts
from app.ui.configure import knob_widgets
from app.ui.panels.diagnosis_panel import diagnosis_panel
from app.ui.panels.fleet_panel import fleet_panel
from app.ui.page.concept_page import concept_page


def panels(lab: LabPort, model: str) -> None:
    """The diagnosis, then the fleet's figures when a Prometheus is set."""
    diagnosis_panel(lab, model)
    fleet_panel(lab, model)


concept_page("diagnosis", "Latency breakdown & diagnosis", concepts.DIAGNOSIS, "gpu_sim", knob_widgets.dynamic,
             TrafficForm(model="gpu_sim", mode="open", rate=150, arrival="bursty"),
             panel=panels)
