"""HTML reports of made-up studies: self-contained (nothing a browser would fetch), escaped, and saying what to serve."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from app.config.model_config import format_config, parse_config
from app.experiments.ab.comparison import ABResult, Arm
from app.experiments.report import html_report
from app.experiments.report.html_report import ab_report, sweep_report
from app.experiments.sweep.space import Choice
from app.paths import MODEL_REPOSITORY
from tests.unit.experiments import samples
from loadgen.stats import ALL

HOSTILE = "<script>alert(1)</script>"
REMOTE = re.compile(r"""(?:\b(?:src|href)\s*=\s*["']?|url\(\s*["']?)\s*(?:[a-z]+:)?//""", re.I)


@pytest.fixture(scope="module")
def sweep_html() -> str:
    space = samples.sweep_space()
    return sweep_report(samples.sweep_study(space, label=HOSTILE), samples.sweep_points(space), space)


@pytest.fixture(scope="module")
def ab_html() -> str:
    result = samples.ab_result(names=("start", HOSTILE))
    return ab_report(samples.ab_study(result, label=f"start vs {HOSTILE}"), result)


@pytest.fixture
def words_only(monkeypatch):
    """Make every chart an empty <svg> element: these tests read the report's words (the two reports above are drawn
    whole, and every chart is checked in test_study_charts.py)."""
    for name in ("sweep_curves", "sweep_by_load", "pareto_chart", "ab_trials", "ab_differences", "ab_timeline"):
        monkeypatch.setattr(html_report, name, lambda *args: None)
    monkeypatch.setattr(html_report, "svg", lambda chart: "<svg></svg>")


def assert_self_contained(html: str, charts: int) -> None:
    assert not REMOTE.search(html), REMOTE.search(html)
    assert "<script" not in html.lower() and "<link" not in html.lower() and "@import" not in html
    assert html.count("<svg") == charts and html.count("</svg>") == charts
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_remote_pattern_catches_what_a_browser_would_fetch():
    for bad in ('<img src="https://x/a.png">', "<a href='//cdn/x'>", "url( http://x/y)", '<use href="ftp://x">'):
        assert REMOTE.search(bad), bad
    assert not REMOTE.search('<svg xmlns="http://www.w3.org/2000/svg">')  # a namespace name, never fetched


def test_a_sweep_report_stands_alone_and_says_what_to_serve(sweep_html):
    assert_self_contained(sweep_html, 3)
    text = re.sub(r"<[^>]+>", " ", sweep_html)
    assert "Serve 2 instances, delay 2000 µs at concurrency 16" in text
    assert "p99 budget 50 ms" in sweep_html  # inside the chart
    assert all(v in text for v in ("2.51.0", "Made-up CPU", "abc1234", "traffic seed", "none reported by the server"))
    assert "grid (every point)" in text and "concurrency: 1, 2, 4, 8, 16" in text
    assert "Could not be applied: 4 instances, delay 0 µs; 4 instances, delay 2000 µs" in text
    assert text.count("could not be applied: made-up refusal") == 2  # every point has a row, failed ones too
    diff = re.search(r"Recommended config against the starting config</h2><pre>(.*?)</pre>", sweep_html, re.S).group(1)
    assert "<span class=del>-  count: 1" in diff and "<span class=add>+  count: 2" in diff
    assert "+  max_queue_delay_microseconds: 2000" in diff
    assert "Recommended config.pbtxt" in text and 'string_value: "3000"' in sweep_html.replace("&quot;", '"')
    assert "perf_analyzer -m gpu_sim -u localhost:8000 -i http --concurrency-range 16" in text


def test_a_sweep_with_no_point_inside_the_sla_recommends_nothing(words_only):
    space = samples.sweep_space(p99_budget_ms=1.0)
    html = sweep_report(samples.sweep_study(space), samples.sweep_points(space), space)
    assert "No measured point kept its p99 within the 1 ms budget" in html
    assert "Recommended config" not in html and html.count("<svg") == 3


def test_an_ab_report_stands_alone_with_verdicts_trials_and_each_arms_diff(ab_html):
    assert_self_contained(ab_html, 3)  # trials, one difference chart, timeline
    text = re.sub(r"<[^>]+>", " ", ab_html)
    # arms by letter and by what they change; the names chosen on the page only in the definition
    assert "B (instances 1 → 2, delay 500 → 2000 µs) is better than A over 4 trials." in text
    assert "Recommended: B (instances 1 → 2, delay 500 → 2000 µs) — clearly better than A" in text
    verdict = ab_html[ab_html.index("<h2>Result</h2>"):ab_html.index("<h2>Charts</h2>")]
    assert "alert" not in verdict and "start" not in verdict, verdict
    assert "chosen as “&lt;script&gt;alert(1)&lt;/script&gt;”" in text
    assert "configuration A (the baseline)" in text and "A (1 instance, max batch 32, delay 500 µs" in text
    assert text.count("trial") >= 8 and "closed loop, concurrency 8" in text and "default (SLA 100 ms)" in text
    assert "-  count: 1" in ab_html and "+  count: 2" in ab_html
    row = re.search(r"<td>goodput within SLA \(req/s\)</td><td class=n>([\d,]+)</td><td class=n>([\d,]+)</td>"
                    r"<td class=n>(\+\d+\.\d%)</td><td class=n>[^<]+</td><td class=n>([^<]+)</td><td>better</td>", ab_html)
    assert row and 350 < int(row[1]) < 450 and 450 < int(row[2]) < 550  # made up: ~400 and ~500 req/s
    assert row[4] == "98.3 %"  # goodput, p99 and throughput of one arm against the baseline: 3 held together
    assert re.search(r"<td>average batch size \(inferences\)</td>(<td class=n>[^<]+</td>){4}<td class=n>95 %</td>",
                     ab_html)  # any other figure stands alone
    assert "3 intervals (these 3 for each configuration compared with A) hold together at 95 %" in text
    assert "geometric mean of the per-trial ratios" in text


def test_the_baseline_is_recommended_when_no_arm_is_clearly_better(words_only):
    result = samples.ab_result(names=("start", "same"))
    same = dict(result.trials)
    same["same"] = same["start"]  # identical figures: no difference at all
    tied = type(result)(result.study_id, result.plan, same)
    assert result.recommendation()[0] == "same" and tied.recommendation()[0] == "start"
    assert "Recommended: keep A (1 instance, max batch 32, delay 500 µs" in ab_report(samples.ab_study(tied), tied)


def test_of_two_arms_clearly_better_the_one_named_says_the_other_qualifies_and_was_not_compared_with_it(words_only):
    two = samples.ab_result(names=("start", "B"))
    arms = (*two.plan.arms, Arm("C", two.plan.arms[1].config_text))

    def less_goodput(f):
        row = dataclasses.replace(f.figures.row(), goodput_rps=f.figures.get("goodput_rps") * 0.99)
        return dataclasses.replace(f, figures=dataclasses.replace(f.figures, client={**f.figures.client, ALL: row}))

    trials = {**two.trials, "C": {t: less_goodput(f) for t, f in two.trials["B"].items()}}
    three = ABResult(two.study_id, dataclasses.replace(two.plan, arms=arms), trials)
    pick, why = three.recommendation()
    print(why)
    assert pick == "B" and "so is C." in why and "not with each other" in why
    assert f"Recommended: {why}" in ab_report(samples.ab_study(three), three).replace("&#x27;", "'")


def test_trials_in_which_the_generator_fell_behind_are_named_on_the_verdict(words_only):
    """The same rule as the live warning (loadgen.behind): over 5 % of a trial's requests sent over 10 ms late."""
    on_time = samples.ab_result(late={("start", 1): 0.04})  # 4 %: a shared machine's usual slips
    assert on_time.behind() == [] and on_time.caution() == ""
    assert "fell behind" not in ab_report(samples.ab_study(on_time), on_time)
    slipped = samples.ab_result(late={("2 instances", 2): 0.2, ("start", 0): 0.07})
    print(slipped.caution())
    assert [(arm, t, round(share, 2)) for arm, t, share in slipped.behind()] == [("start", 0, 0.07),
                                                                               ("2 instances", 2, 0.2)]
    assert "fell behind its schedule in 2 of 8 trials" in slipped.caution()
    assert "A trial 1: 7%; B trial 3: 20%" in slipped.caution()
    html = ab_report(samples.ab_study(slipped), slipped)
    assert "<p class=note>Caution: The load generator fell behind its schedule in 2 of 8 trials" in html
    # the caution first, then what was found, then the recommendation it qualifies
    assert html.index("Caution: The load generator") < html.index("is better than A") < html.index(
        "Recommended, once the caution above is dealt with: B (")


def test_a_sweep_point_measured_while_the_generator_fell_behind_says_so(words_only):
    space = samples.sweep_space()
    points = samples.sweep_points(space)
    best = max((p for p in points if p.status == "done" and space.meets_sla(p.p99, p.throughput)),
               key=lambda p: p.goodput)
    assert best.behind is None and best.caution() == ""
    late = samples.window(samples.T0, 1.0, 2_000.0, 20.0, np.random.default_rng(1), late=0.3)  # the most goodput
    slipped = dataclasses.replace(best, figures=late.figures(), stable=False)
    assert round(slipped.behind, 2) == 0.3
    assert slipped.caution() == ("its figures never settled (the window limit came first); the load generator fell "
                                 "behind here (30% of requests sent over 10 ms late), so the server saw a smoother, "
                                 "lighter load than asked: measure it again before relying on it")
    html = sweep_report(samples.sweep_study(space), [slipped if p is best else p for p in points], space)
    text = re.sub(r"<[^>]+>", " ", html)
    assert "30% sent over 10 ms late" in text and "Caution: its figures never settled" in text
    assert "2 never settled; the load generator fell behind at 1." in text


def _words(html: str) -> str:
    """Return a report's text outside its charts (the charts' own labels are the charts' business)."""
    return re.sub(r"<[^>]+>", " ", re.sub(r"<svg.*?</svg>", "", html, flags=re.S))


def test_every_report_of_a_cost_model_says_it_is_simulated_and_a_real_model_s_does_not(words_only):
    space = samples.sweep_space()
    sweep = sweep_report(samples.sweep_study(space), samples.sweep_points(space), space)
    result = samples.ab_result()
    ab = ab_report(samples.ab_study(result), result)
    for html in (sweep, ab):
        assert "<p class=sim><b>Simulated model:</b> gpu_sim is a simulated GPU (a labelled cost model" in html
        assert html.index("class=sim") < html.index("<h2>")  # under the title, before any result
        assert "<th>simulated device</th><td>a simulated GPU" in html
    mlp = (MODEL_REPOSITORY / "mlp" / "config.pbtxt").read_text()
    two = format_config(Choice(instances=2).config(parse_config(mlp)))
    real = ABResult(9, dataclasses.replace(result.plan, model="mlp", arms=(Arm("start", mlp), Arm("2 instances", two))),
                    result.trials)
    html = ab_report(dataclasses.replace(samples.ab_study(real), model="mlp", base_config=mlp), real)
    assert "imulated" not in _words(html) and "B (instances 1 → 2) is better than A" in _words(html)


def test_arms_picked_from_a_sweep_are_named_by_what_they_change_not_by_the_lab_s_ids(words_only):
    result = samples.ab_result(names=("A (serving now)", "B (sweep 2: 2 instances, delay 2000 µs)"))
    text = _words(ab_report(samples.ab_study(result, label="a comparison"), result))
    print(text[:1500])
    # where it came from, said once, in the definition
    assert text.count("sweep 2") == 1 and "chosen as “B (sweep 2: 2 instances, delay 2000 µs)”" in text
    assert "serving now" in text.split("chosen as")[1] and text.count("serving now") == 1
    assert "B (instances 1 → 2, delay 500 → 2000 µs) against A" in text  # the diff's and the table's headings
    assert "Recommended config.pbtxt: B (instances 1 → 2, delay 500 → 2000 µs)" in text


def test_a_sweep_s_caution_comes_before_the_point_it_recommends(words_only):
    space = samples.sweep_space()
    points = samples.sweep_points(space)
    best = max((p for p in points if p.status == "done" and space.meets_sla(p.p99, p.throughput)),
               key=lambda p: p.goodput)
    shaky = dataclasses.replace(best, stable=False)
    html = sweep_report(samples.sweep_study(space), [shaky if p is best else p for p in points], space)
    assert html.index("<p class=note>Caution: its figures never settled") < html.index("Serve 2 instances")


@pytest.mark.parametrize(("recorded", "said"), [
    ({}, "not recorded with this study"),
    ({"repository": "/srv/models", "repository_commit": "abc1234", "repository_changes": []},
     "none: every file is as committed"),
    ({"repository": "/srv/models", "repository_commit": "abc1234",
      "repository_changes": ["gpu_sim/config.pbtxt", "mlp/configs/gpu.pbtxt"]},
     "2: gpu_sim/config.pbtxt, mlp/configs/gpu.pbtxt"),
    ({"repository": "/srv/models", "repository_commit": None, "repository_changes": None},
     "unknown: the repository is not in git (or git was not available)"),
    ({"repository": None, "repository_commit": None, "repository_changes": None},
     "unknown: the lab cannot see the repository (a remote server)")])
def test_the_environment_says_which_model_files_differed_from_the_commit(recorded, said, words_only):
    space = samples.sweep_space()
    study = dataclasses.replace(samples.sweep_study(space), env={**samples.ENV, **recorded})
    html = sweep_report(study, samples.sweep_points(space), space)
    row = re.search(r"<tr><th>model repository files that differed from that commit at the start</th><td>([^<]*)</td>",
                    html)
    assert row and row[1] == said, row and row[1]
    if recorded.get("repository_commit"):
        assert "<th>model repository&#x27;s git commit</th><td>abc1234</td>" in html
