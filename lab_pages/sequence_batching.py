"""Sequence batching: stateful sessions stay on their slot."""
from app.traffic.form import TrafficForm
from app.ui.page import concepts
from app.ui.configure import knob_widgets
from app.ui.page.concept_page import concept_page
from app.ui.panels.sequences_panel import correctness_panel

concept_page("sequence", "Sequence batching", concepts.SEQUENCE, "stream_acc", knob_widgets.sequence,
             TrafficForm(model="stream_acc", sequences=8, sequence_length=20), panel=correctness_panel)
