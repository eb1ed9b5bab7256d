"""/demo for an audience (app/ui/demo/demo_layout.py, demo_screen.py) on the FakeLab: the operator's live lab with no
control, its words plain sentences whose numbers are the tiles', a note shown as typed, a running scenario's story
and a stored verdict the presenter chose — never a raw value, a marker number or an address."""
from __future__ import annotations

import re
import time

from markdown_it import MarkdownIt

from app.scenarios.claims import SCENARIOS
from app.scenarios.runner import start_scenario
from app.store.database import DONE, Study
from app.ui.demo import presenter
from app.ui.demo.demo_screen import CHART_S
from app.ui.live import live_charts as charts
from app.ui.live.live_frame import frame
from loadgen.spec import LoadSpec
from tests.unit.ui.apptest import controls, labels, metric, open_page, shown, soon, texts

PAGE = "lab_pages/demo.py"
HOSTILE = "[x](http://example.invalid) <img src=http://example.invalid/a.png> **b** $x$ :red[y]"
RAW = re.compile(r"\bNaN\b|\bNone\b|\bnull\b|\bundefined\b|\d\.\d{4,}|0\.000000")
NUMBER = re.compile(r"(?:under )?\d[\d,]*(?:\.\d+)? ?(?:%|ms|req/s|infer/s)?")


def words(at) -> list[str]:
    return [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]


def test_idle_it_says_so_and_offers_no_control(on_fake):
    at = open_page(PAGE)
    assert at.title[0].value == "Triton Batching Lab — live"
    assert controls(at) == [], labels(controls(at))
    assert "**Now:** no traffic is running." in texts(at.markdown), words(at)
    idle = frame(on_fake, "gpu_sim", CHART_S, per_class=False, audience=True).specs["latency"]
    assert charts.IDLE in str(idle) and idle["datasets"]["sla"] == []  # the idle chart says so; no SLA to draw


def test_it_shows_the_operators_live_lab_in_plain_words_and_the_operator_sees_the_viewer(on_fake, choice):
    on_fake.start_traffic(LoadSpec(model="gpu_sim", concurrency=2, duration_s=600), ran_s=12)
    on_fake.mark("gpu_sim", "apply", "delay 500→2000 (a change the audience should see)")
    at = open_page(PAGE)
    assert controls(at) == [], labels(controls(at))
    said = texts(at.markdown)
    latest = [m for m in said if m.startswith("**Latest change**")]
    assert latest and "gpu_sim changed" in latest[0] and "#" not in latest[0], said  # a sentence, no marker number
    assert any(re.search(r"[1-9]\d* answers", c) for c in texts(at.caption)), texts(at.caption)
    assert metric(at, "99 % answered within").endswith(" ms"), [(m.label, m.value) for m in at.metric]
    assert any(i.startswith("**Running** against gpu_sim") for i in texts(at.info)), texts(at.info)
    now = [m for m in said if m.startswith("**Now:**")]
    values = {m.value for m in at.metric}
    for sentence in now:  # every number the sentence says is a tile's, from the same window
        found = [n.strip() for n in NUMBER.findall(sentence.removeprefix("**Now:**"))]
        assert all(n in values for n in found), (sentence, values)
    assert not [w for w in words(at) if RAW.search(shown(w))], [w for w in words(at) if RAW.search(shown(w))]
    assert "127.0.0.1:" not in " ".join(words(at))
    chart = frame(on_fake, "gpu_sim", CHART_S, per_class=False, audience=True).specs["latency"]
    assert chart["datasets"]["sla"] == [{"sla": 100.0, "label": "SLA 100 ms"}]  # the traffic class's SLA
    assert chart["datasets"]["main"]
    operator = open_page("lab_pages/dynamic_batching.py")
    assert any("demo viewer" in c and "connected" in c for c in texts(operator.caption)), texts(operator.caption)


def test_a_notes_text_reaches_the_demo_as_typed(on_fake, choice):
    choice.choose(presenter.LIVE)
    on_fake.mark("gpu_sim", "note", HOSTILE)
    at = open_page(PAGE)
    lines = [m.value for m in at.markdown if "Latest change" in m.value]
    assert lines, words(at)
    source = lines[0]
    assert HOSTILE in shown(source) and not re.search(r"#\d", shown(source)), source  # as typed, no marker number
    for raw in ("[x](", "<img", "**b**", "$x$", ":red["):  # each mark of it preceded by a backslash
        assert not re.search(r"(?<!\\)" + re.escape(raw), source), f"{raw!r} reaches Markdown unescaped: {source!r}"
    html = MarkdownIt("commonmark").render(source)
    assert "<a " not in html and "<img" not in html and "<strong>b</strong>" not in html, html


def test_a_running_scenario_is_the_story_with_its_claim_and_progress(on_fake, choice):
    scenario = SCENARIOS["instances-x-batching"]
    start_scenario(on_fake, scenario.name)
    try:
        soon(lambda: on_fake.job().progress is not None and on_fake.job().progress.current, what="a phase under way")
        at = open_page(PAGE)
        said = texts(at.markdown)
        assert any(m.startswith("**Guided scenario: ") for m in said) and any(m.startswith("*Claim:* ") for m in said)
        bars = at.get("progress")
        assert bars and shown(bars[0].proto.text).startswith("Phase 1 of 2: "), [b.proto.text for b in bars]
    finally:
        on_fake.cancel_job(wait_s=10)


def test_a_stored_verdict_chosen_by_the_presenter_is_said_in_plain_sentences(on_fake, choice):
    """A stored scenario whose checks carry raw floats and a missing figure: /demo says each check in one sentence
    with its number at a sensible precision, never 'None' or '44.9596'."""
    sid = on_fake.add_study(Study("scenario", "Queue delay at low and high load", "gpu_sim", {
        "scenario": "queue-delay", "full": False, "expect": "At low load the delay is added latency.",
        "phases": [{"name": "low load, delay 0 µs"}, {"name": "low load, delay 10000 µs"}]}, time.time()))
    checks = [
        {"claim": "at low load the 10 ms delay adds about itself to the median",
         "measured": "p50 increase ÷ 10 ms = 9.8123 / 10.0 = 0.981234", "margin": "≥ 0.6 (measured 0.98-1.00)",
         "ok": True},
        {"claim": "high load batches are larger", "measured": "average batch = None / 1.0 = 44.9596",
         "margin": "≥ 1.5", "ok": False}]
    on_fake.update_study(sid, status=DONE, result={"passed": False, "checks": checks})
    choice.choose(presenter.STUDY, sid)
    at = open_page(PAGE)
    said = [shown(w).replace("**", "") for w in words(at)]
    assert any("The claim did not hold: 1 of 2 checks passed." in w for w in said), said
    assert any("At low load the 10 ms delay adds about itself to the median. Measured: 0.98 (needed ≥ 0.6)" in w
               for w in said), said
    assert any("High load batches are larger. Measured: 44.96 (needed ≥ 1.5)" in w for w in said), said
    assert not [w for w in words(at) if RAW.search(shown(w))], [w for w in words(at) if RAW.search(shown(w))]
    assert any("At low load the delay is added latency." in w for w in said), said
