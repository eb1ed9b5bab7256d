"""Sequence batching: stateful sessions stay on their slot."""
from app.traffic import TrafficForm
from app.ui import concepts, knob_widgets
from app.ui.page import concept_page
from app.ui.sequences import correctness_panel

concept_page("sequence", "Sequence batching", concepts.SEQUENCE, "stream_acc", knob_widgets.sequence,
             TrafficForm(model="stream_acc", sequences=8, sequence_length=20), panel=correctness_panel)
