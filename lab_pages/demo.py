"""Demo: the operator's live lab for an audience (open /demo): the running study's story, one legible latency chart,
plain words; read-only, and what it shows is the presenter's choice (app.ui.demo.presenter)."""
from app.ui.demo.demo_layout import demo_page
from app.ui.page.layout import lab_or_stop

demo_page(lab_or_stop(prompt=False))
