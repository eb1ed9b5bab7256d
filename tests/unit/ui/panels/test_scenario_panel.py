"""The guided scenarios of a concept page (app/ui/panels/scenario_panel.py) on the FakeLab: Run starts the lab's one
job, its progress and narration show and every Run is off while it runs, Cancel (the Experiments page's) ends it and the
panel says how; a stored verdict shows in icons Debian's fonts draw, its phase table at its precision, the presenter's
script beside it; a scenario that could not start says why."""
from __future__ import annotations

import re

from app.paths import ROOT
from app.scenarios.claims import SCENARIOS
from app.store.database import DONE, Experiment, Study
from app.ui.panels.scenario_panel import HELD, NOT_HELD
from tests.unit.ui.apptest import PAGES, labels, no_exception, ok, open_page, run_page, soon, texts

PAGE = {"dynamic": "dynamic_batching", "instances": "instances", "sequence": "sequence_batching",
        "priority": "priority", "diagnosis": "diagnosis", "three": "three_batchings"}


def test_no_check_mark_emoji_left_in_the_code():
    """✅ and ❌ draw as empty boxes in Debian's Chromium (no emoji font): the verdicts use Material icons."""
    code = [*sorted((ROOT / "app").rglob("*.py")), *PAGES, ROOT / "streamlit_app.py"]
    found = [f"{p.relative_to(ROOT)}:{n}" for p in code for n, line in enumerate(p.read_text().splitlines(), 1)
             if "\u2705" in line or "\u274c" in line]
    assert not found, found


def test_run_starts_the_scenario_shows_its_progress_and_cancel_ends_it(on_fake):
    scenario = SCENARIOS["instances-x-batching"]
    page = f"lab_pages/{PAGE[scenario.page]}.py"
    at = open_page(page)
    ok(at.button(key=f"scn:{scenario.name}:run").click().run())
    assert on_fake.job_running() and on_fake.job().kind == "scenario"
    soon(lambda: on_fake.job().progress is not None and on_fake.job().progress.current, what="a phase under way")
    ok(at.run())
    bars = at.get("progress")
    assert bars and re.search(r"\(\d+ of \d+\)$", bars[0].proto.text), [b.proto.text for b in bars]
    assert all(b.disabled for b in at.button if b.key and b.key.startswith("scn:") and b.key.endswith(":run"))

    experiments = open_page("lab_pages/experiments.py")
    ok(experiments.button(key="exp:cancel").click().run())
    assert on_fake.wait_job(10), "the scenario did not end after Cancel"
    ok(at.run())
    assert any(w.startswith("Last run (cancelled): ") for w in texts(at.warning)), texts(at.warning)
    assert not at.button(key=f"scn:{scenario.name}:run").disabled


def test_a_stored_verdict_shows_icons_text_at_precision_and_the_presenter_script(on_fake):
    scenario = SCENARIOS["instances-x-batching"]
    names = [p.name for p in scenario.phases(False)]
    checks = [{"claim": "more instances split the queue", "measured": "average batch 1 instance ÷ 4 = 7.95 / 3.90 "
               "= 2.04", "margin": "≥ 1.5", "ok": True},
              {"claim": "instances × batch size ≈ the requests in flight", "measured": "4 × 3.90 ÷ 16 = 0.97",
               "margin": "≥ 0.5 and ≤ 1.5", "ok": False}]
    sid = on_fake.add_study(Study("scenario", scenario.title, scenario.model, {"scenario": scenario.name}, 1.0))
    for name, batch in zip(names, (7.9512, 3.90123)):
        on_fake.add_run(Experiment(f"{scenario.title}: {name}", scenario.model, "", client={"all": {
            "throughput_rps": 812.4567, "p50_ms": 44.9596, "p99_ms": None}}, server={"avg_batch": batch},
            kind="phase", study_id=sid, point=name, outcome={}))
    on_fake.update_study(sid, status=DONE, result={"passed": False, "checks": checks},
                         note="the starting config serves again")
    at = run_page(f"lab_pages/{PAGE[scenario.page]}.py")  # a failed claim is an st.error
    verdicts = [m.value for m in at.markdown if m.value.startswith((HELD, NOT_HELD))]
    assert len(verdicts) == 2 and verdicts[0].startswith(HELD) and verdicts[1].startswith(NOT_HELD), verdicts
    assert ":material/check_circle:" in HELD and ":material/cancel:" in NOT_HELD
    assert any(t.startswith("Last run: the claim did not hold") for t in texts(at.error)), texts(at.error)
    table = next(d.value for d in at.dataframe if "avg batch" in d.value.columns)
    cells = [str(v) for v in table.to_numpy().ravel()]
    assert list(table["avg batch"]) == ["7.95", "3.90"] and set(table["p50 (ms)"]) == {"44.96"}, cells
    assert not [c for c in cells if c in ("None", "nan") or re.search(r"\d\.\d{3,}", c)], cells
    assert any(m.value.startswith("**Before you press Run:**") for m in at.markdown), "no presenter script"
    assert f"Presenter: {scenario.script.after_not}" in texts(at.caption), texts(at.caption)


def test_a_scenario_that_could_not_start_says_why(on_third_party):
    """The FakeLab's lab_models() is itself, which lacks the lab's models: the job stops before it measures anything."""
    at = open_page("lab_pages/instances.py")
    run = next(b for b in at.button if b.label == "Run on the lab's models")
    no_exception(run.click().run())
    assert on_third_party.wait_job(10)
    no_exception(at.run())
    said = [e for e in texts(at.error) if e.startswith("The last run stopped before it measured anything: ")]
    assert said and "which this server does not serve" in said[0], texts(at.error)
    assert "Run on the lab's models" in labels(at.button)
