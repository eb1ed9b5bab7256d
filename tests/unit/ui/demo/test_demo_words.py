"""/demo's words (app/ui/demo/demo_words.py, demo_changes.py): a config change said as what it does, checks with their
measured number, shares that never cross the diagnosis's line by rounding — and, on the FakeLab, a change applied said
from the settings it moved, and every number a sentence says a tile's, from the same window."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from app.config.edits import set_settings
from app.config.read import settings_of
from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings
from app.diagnosis.patterns import WAITING_SHARE
from app.diagnosis.diagnose import diagnose_figures
from app.metrics.catalog import METRICS, presenter_label
from app.traffic.form import TrafficForm, build_spec
from app.ui.demo.demo_changes import marker_said
from app.ui.demo.demo_words import (change_said, change_sentences, check_words, detail_tiles, figure, share,
                                    state_sentence, tidy, tiles, time_in_server, traffic_words)
from app.ui.live.live_frame import frame

BASE = ModelSettings(max_batch_size=32, dynamic_batching=DynamicBatching(max_queue_delay_microseconds=500))
RAW = re.compile(r"\bNone\b|\bnan\b|\bNaN\b|\d\.\d{4,}")


def test_a_delay_change_is_said_as_what_the_batcher_may_do_and_the_field_is_on_hover():
    said = change_said(BASE, replace(BASE, dynamic_batching=DynamicBatching(max_queue_delay_microseconds=5000)))
    assert said.text == "The batcher may now wait up to 5 ms to fill a batch.", said
    assert "max_queue_delay_us 500→5000" in said.hover, said.hover


@pytest.mark.parametrize(("new", "words"), [
    (replace(BASE, instance_groups=(InstanceGroup(2),)), "2 instances now run at once"),
    (replace(BASE, instance_groups=(InstanceGroup(1),)), "a setting of the model changed"),  # 1 instance either way
    (replace(BASE, dynamic_batching=None), "dynamic batching is now off: every request runs on its own"),
    (replace(BASE, dynamic_batching=DynamicBatching(max_queue_delay_microseconds=0)),
     "the batcher no longer waits to fill a batch"),
    (replace(BASE, dynamic_batching=DynamicBatching((4, 8), 500)),
     "the batcher now aims for batches of 4 or 8"),
    (replace(BASE, max_batch_size=8), "a batch may now hold up to 8 requests"),
])
def test_each_knob_has_its_sentence(new, words):
    said = change_sentences(BASE, new)
    assert said == [words], said


def test_a_check_is_one_sentence_with_its_measured_number_and_no_raw_float():
    words = check_words({"claim": "at low load the 10 ms delay adds about itself to the median",
                         "measured": "p50 increase ÷ 10 ms = 9.8123456 / 10.0 = 0.98",
                         "margin": "≥ 0.6 (a request waits for the delay; measured 0.98-1.00)", "ok": True})
    assert words.sentence == "At low load the 10 ms delay adds about itself to the median."
    assert (words.measured, words.bar, words.ok) == ("0.98", "≥ 0.6", True)
    assert "9.81 / 10.0" in words.hover and not RAW.search(words.hover), words.hover
    assert tidy("p50 44.9596 ms, p99 None") == "p50 44.96 ms, p99 —"


def test_a_share_never_rounds_across_the_diagnosis_line():
    assert share(WAITING_SHARE - 1e-4) == "39 %" and share(WAITING_SHARE) == "40 %"
    assert share(0.004) == "under 1 %" and share(None) == "—" and share(float("nan")) == "—"
    assert figure("p99_ms", None) == "—" and figure("p99_ms", 33.6543) == "33.65 ms"


def test_every_presenter_label_is_short_enough_for_a_tile():
    long = {m.key: m.presenter for m in METRICS if len(m.presenter) > 30}
    assert not long, long
    assert presenter_label("p99_ms") == "99 % answered within" and presenter_label("fail_rps") == "server failures"


def test_the_load_in_words():
    assert traffic_words(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=40))) == \
        "40 requests per second, arriving at random moments"
    assert traffic_words(build_spec(TrafficForm(model="gpu_sim", concurrency=16))) == "16 requests always in flight"


# --- on the FakeLab ------------------------------------------------------------------------------------------------
NUMBER = re.compile(r"(?:under )?\d[\d,]*(?:\.\d+)? ?(?:%|ms|req/s|infer/s)?")


def test_an_applied_change_is_said_from_the_settings_it_moved(fake):
    lab = fake
    current = lab.served_config("gpu_sim")
    s = settings_of(current)
    moved = replace(s, dynamic_batching=replace(s.dynamic_batching, max_queue_delay_microseconds=5000),
                    instance_groups=(replace(s.instance_groups[0], count=2),))
    lab.apply("gpu_sim", set_settings(current, moved), "max_queue_delay_us 500→5000, count 1→2")
    marker = lab.last_change("gpu_sim")
    said = marker_said(lab, marker)
    assert said.text == "2 instances now run at once; the batcher may now wait up to 5 ms to fill a batch.", said
    assert "#" not in said.text and "max_queue_delay" in said.hover


def test_every_number_said_in_words_is_a_tiles_from_the_same_window(fake):
    """A short run of the lab's traffic on gpu_sim: the sentences under the story quote only the tiles' figures, and
    call the time waiting-driven exactly when the tile's share is at the diagnosis's line or above."""
    lab = fake
    lab.start_traffic(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=60, duration_s=300)), ran_s=12)
    f = frame(lab, "gpu_sim", 180, per_class=False, audience=True)
    assert f.tile.samples() >= 300, f.tile.samples()  # 10 s at 60 req/s
    seen = diagnose_figures(f.tile, settings_of(lab.served_config("gpu_sim")))
    said = [s for s in (state_sentence(seen), time_in_server(f.tile)) if s is not None]
    shown = {t.label: t.value for t in tiles(f.tile) + detail_tiles(f.tile)}
    assert said, "no sentence for a window with traffic"
    values = set(shown.values())
    for s in said:
        for number in NUMBER.findall(s.text):
            assert number.strip() in values, f"{number!r} of {s.text!r} is no tile's value: {shown}"
        assert not RAW.search(s.text), s.text
    share_tile = shown[presenter_label("queue_share")]
    waiting = "the waiting, not the computing" in said[-1].text
    assert waiting == (int(share_tile.split()[0]) >= WAITING_SHARE * 100), (share_tile, said[-1].text)
