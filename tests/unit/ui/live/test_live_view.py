"""The live view (app/ui/live/live_view.py) on the FakeLab: the window's tiles under traffic, a change's before and
after in the markers table, the traffic of another model named, Pause freezing the view."""
from __future__ import annotations

from app.metrics.catalog import label
from loadgen.spec import LoadSpec
from tests.unit.ui.apptest import metric, ok, open_page, texts, widget

PAGE = "lab_pages/dynamic_batching.py"


def test_the_tiles_and_the_markers_table_under_traffic(on_fake):
    on_fake.start_traffic(LoadSpec(model="gpu_sim", concurrency=2, duration_s=600), ran_s=12)
    at = open_page(PAGE)
    assert metric(at, "traffic") == "running"
    assert metric(at, label("p99_ms")) != "—" and metric(at, label("failed_share")) == "0.0", \
        [(m.label, m.value) for m in at.metric]
    assert any(c.startswith("Batch sizes formed in the last 3 min (size×executions): ") and "none yet" not in c
               for c in texts(at.caption)), texts(at.caption)
    table = next(d.value for d in at.dataframe if "change" in d.value.columns)
    assert "traffic start" in table["change"].iloc[-1], table


def test_traffic_to_another_model_is_named_and_its_client_lines_hidden(on_fake):
    on_fake.start_traffic(LoadSpec(model="mlp", concurrency=2, duration_s=600), ran_s=10)
    at = open_page(PAGE)
    assert "Traffic is running against mlp, not gpu_sim: client lines are hidden here." in texts(at.info)
    assert metric(at, "traffic") == "stopped"


def test_pause_freezes_the_live_view(on_fake):
    at = open_page(PAGE)
    ok(widget(at.toggle, "Pause").set_value(True).run())
    assert any(c.startswith("Paused at ") for c in texts(at.caption)), texts(at.caption)
    frozen = at.session_state["dynamic:paused_at"]
    ok(at.run())
    assert at.session_state["dynamic:paused_at"] == frozen  # the view stays at the moment it was paused
    ok(widget(at.toggle, "Pause").set_value(False).run())
    assert not any(c.startswith("Paused at ") for c in texts(at.caption))
