"""The sweep form (app/ui/studies/sweep_form.py) offers only the knobs the config a model serves can take."""
from __future__ import annotations

from tests.unit.ui.apptest import labels, ok, open_page, texts, widget


def test_the_sweep_form_offers_only_the_knobs_the_served_config_can_take(on_fake):
    """gpu_sim batches dynamically: queue delays are offered. stream_acc uses sequence batching (read from the config
    it serves): no queue delay or preferred sizes, not even with a max_batch_size, and the form says why."""
    at = open_page("lab_pages/experiments.py")
    assert widget(at.multiselect, "max_queue_delay (µs)") and "max_batch_size (empty: keep)" in labels(at.multiselect)
    assert on_fake.served_config("stream_acc").HasField("sequence_batching")
    ok(at.selectbox(key="exp:sweep_model").set_value("stream_acc").run())
    ok(at.multiselect(key="exp:sweep_sizes:stream_acc").set_value([4, 8]).run())
    offered = labels(at.multiselect) + labels(at.text_input)
    assert "max_queue_delay (µs)" not in offered and not any(x.startswith("Preferred batch sizes") for x in offered)
    assert "Instance counts" in offered and "max_batch_size (empty: keep)" in offered, offered
    assert any("No queue delays or preferred batch sizes for stream_acc" in c and "sequence batching" in c
               for c in texts(at.caption)), texts(at.caption)
