"""The verdict's words on made-up trials: clear differences first as plain sentences, whichever figure they concern;
arms named by letter and by what they change; the same sentences for the page and the report."""
from __future__ import annotations

from app.config.model_config import format_config, parse_config
from app.experiments.ab.comparison import ABPlan, ABResult, Arm
from app.experiments.ab.trial import Trial
from app.timeline.figures import Figures
from app.timeline.sides import ServerFigures, client_rows
from app.experiments.ab.verdict_words import change_words, config_words, percents
from app.experiments.sweep.space import Choice
from app.store.database import DONE
from loadgen.stats import ALL
from tests.unit.experiments.samples import BASE_CONFIG

NOISY = [100.0, 110.0, 90.0, 100.0]  # A's figure per trial; B's NOISY_B: crosses zero, no clear difference
NOISY_B = [105.0, 95.0, 100.0, 100.0]


def _config(**knobs) -> str:
    return format_config(Choice(**knobs).config(parse_config(BASE_CONFIG)))


def _result(a: dict[str, list[float]], b: dict[str, list[float]], b_config: str | None = None,
            min_effect: float = 0.03) -> ABResult:
    """Return a made-up comparison of A (the sample config) and B (delay 5000 µs unless given) from per-trial
    figures of all requests."""
    plan = ABPlan("gpu_sim", (Arm("A (serving now)", BASE_CONFIG), Arm("B (sweep 2: delay 5000 µs)",
                                                                        b_config or _config(delay_us=5000))),
                  {}, trials=4, min_effect=min_effect)
    trials = {arm.name: {t: Trial(Figures(client=client_rows({ALL: {k: v[t] for k, v in figures.items()}})))
                         for t in range(4)} for arm, figures in zip(plan.arms, (a, b))}
    return ABResult(1, plan, trials, DONE)


def test_a_clear_p50_is_said_first_in_a_sentence_of_its_own_though_the_headline_figures_show_nothing():
    """The issue's case: p50 +35 % (CI +33 to +36 %) was buried as a 'lead' after 'no clear difference'.
    By hand: B / A of p50 per trial 1.34, 1.35, 1.36, 1.35; logs mean 0.30009, sd 0.006050, half width
    3.182 · 0.006050 / 2 = 0.009626; e^0.30009 = 1.350, e^0.29046 = 1.337, e^0.30972 = 1.363."""
    p50 = [20.0, 21.0, 19.0, 20.0]
    result = _result({"p50_ms": p50, "p99_ms": NOISY, "goodput_rps": NOISY, "throughput_rps": NOISY},
                     {"p50_ms": [x * r for x, r in zip(p50, (1.34, 1.35, 1.36, 1.35))], "p99_ms": NOISY_B,
                      "goodput_rps": NOISY_B, "throughput_rps": NOISY_B})
    words = result.findings("B (sweep 2: delay 5000 µs)")
    print(words)
    assert words == [
        "B (delay 500 → 5000 µs) against A over 4 trials:",
        "B's client p50 is 35 % higher than A's (95 % CI +34 to +36 %): worse.",
        "No clear difference in goodput, p99 or throughput (every interval includes zero or the difference is under "
        "3%)."]
    assert result.verdict("B (sweep 2: delay 5000 µs)") == " ".join(words)
    assert "sweep 2" not in result.verdict("B (sweep 2: delay 5000 µs)")


def test_clear_headline_figures_come_first_in_their_order_then_the_others_then_what_is_unclear():
    a = {"goodput_rps": [100.0, 102.0, 98.0, 100.0], "p99_ms": [40.0, 42.0, 38.0, 40.0],
         "throughput_rps": NOISY, "p50_ms": [10.0, 10.5, 9.5, 10.0]}
    b = {"goodput_rps": [150.0, 150.0, 150.0, 151.0], "p99_ms": [20.0, 21.0, 19.0, 20.5],
         "throughput_rps": NOISY_B, "p50_ms": [5.0, 5.5, 4.5, 5.0]}
    words = _result(a, b).findings("B (sweep 2: delay 5000 µs)")
    print(words)
    assert words[0] == "B (delay 500 → 5000 µs) is better than A over 4 trials."
    assert [w.split(" is ")[0] for w in words[1:4]] == ["B's goodput within SLA", "B's client p99", "B's client p50"]
    assert words[1].startswith("B's goodput within SLA is 50 % higher than A's (98.3 % CI +")  # a headline: 3 together
    assert "(95 % CI " in words[3] and words[3].endswith(": better.")  # p50 stands alone at 95 %
    assert words[4] == ("No clear difference in throughput (every interval includes zero or the difference is under "
                        "3%).")


def test_better_on_one_headline_figure_and_worse_on_another_is_a_trade():
    a = {"goodput_rps": [100.0, 101.0, 99.0, 100.0], "p99_ms": [40.0, 41.0, 39.0, 40.0], "throughput_rps": NOISY}
    b = {"goodput_rps": [120.0, 121.0, 119.0, 121.0], "p99_ms": [60.0, 62.0, 58.0, 61.0], "throughput_rps": NOISY_B}
    words = _result(a, b).findings("B (sweep 2: delay 5000 µs)")
    assert words[0] == "B (delay 500 → 5000 µs) trades against A over 4 trials: better on goodput, worse on p99."
    assert words[2].startswith("B's client p99 is 51 % higher than A's (98.3 % CI +") and words[2].endswith(": worse.")


def test_nothing_clear_is_one_sentence_saying_so():
    figures = {"goodput_rps": NOISY, "p99_ms": NOISY, "throughput_rps": NOISY, "p50_ms": NOISY}
    moved = {k: NOISY_B for k in figures}
    words = _result(figures, moved).findings("B (sweep 2: delay 5000 µs)")
    assert words == ["B (delay 500 → 5000 µs) against A over 4 trials: no clear difference in goodput, p99 or "
                     "throughput, nor in any other figure — every interval includes zero or the difference is under "
                     "3%."]
    server_only = {arm.name: {t: Trial(Figures(server=ServerFigures(avg_batch=4.0 + t % 2))) for t in range(4)}
                   for arm in _result(figures, moved).plan.arms}  # no client figures at all: nothing to name
    assert ABResult(1, _result(figures, moved).plan, server_only, DONE).findings("B (sweep 2: delay 5000 µs)") == [
        "B (delay 500 → 5000 µs) against A over 4 trials: no clear difference in any figure — every interval includes "
        "zero or the difference is under 3%."]


def test_a_neutral_figure_and_a_figure_of_a_zero_baseline_read_plainly():
    result = _result({"p99_ms": NOISY, "rejected": [0.0, 0.0, 0.0, 0.0]},
                     {"p99_ms": NOISY_B, "rejected": [12.0, 14.0, 13.0, 13.0]})
    words = result.findings("B (sweep 2: delay 5000 µs)")
    print(words)
    # A rejected nothing: no percentage of zero, the difference in requests (t(0.975, 3) · 0.8165 / 2 = 1.30)
    assert words[1] == "B's rejected is 13 higher than A's (95 % CI 12 to 14): worse."
    plan = result.plan
    batch = {arm.name: {t: Trial(Figures(server=ServerFigures(avg_batch=v))) for t, v in enumerate(values)}
             for arm, values in zip(plan.arms, ([4.0, 4.2, 3.8, 4.0], [2.0, 2.1, 1.9, 2.0]))}
    words = ABResult(1, plan, batch, DONE).findings("B (sweep 2: delay 5000 µs)")
    # neither better nor worse: no verdict word
    assert words[1] == "B's average batch size is 50 % lower than A's (95 % CI -50 to -50 %)."
    assert percents((0.35, 0.33, 0.36)) == ["+35", "+33", "+36"]
    assert percents((0.051, 0.02, 0.08)) == ["+5.1", "+2.0", "+8.0"]  # under 10 %: one decimal for all three


def test_arms_are_named_by_letter_and_by_what_they_change_from_the_baseline():
    result = _result({"p99_ms": NOISY}, {"p99_ms": NOISY_B}, b_config=_config(instances=2, delay_us=0))
    assert result.letter("A (serving now)") == "A" and result.letter("B (sweep 2: delay 5000 µs)") == "B"
    assert result.title("A (serving now)") == "A (1 instance, max batch 32, delay 500 µs, preferred [4, 8])"
    assert result.title("B (sweep 2: delay 5000 µs)") == "B (instances 1 → 2, delay 500 → 0 µs)"
    pick, why = result.recommendation()
    assert pick == "A (serving now)" and why.startswith("keep A (1 instance, max batch 32")
    assert "serving now" not in why


def test_change_words_name_every_difference_and_never_invent_one():
    assert change_words(BASE_CONFIG, BASE_CONFIG) == "the same config"
    warm = BASE_CONFIG + 'model_warmup { name: "w" batch_size: 1 }\n'
    assert change_words(BASE_CONFIG, warm) == "model_warmup changed"  # outside the concept knobs: named by field
    assert change_words(BASE_CONFIG, _config(delay_us=5000)) == "delay 500 → 5000 µs"
    assert change_words(BASE_CONFIG, "not { a config") == "a config that could not be read"
    assert config_words("max_batch_size: 0\n") == "1 instance, no batching"


def test_each_arm_of_three_is_compared_with_a_and_named_by_its_own_change():
    plan = ABPlan("gpu_sim", (Arm("one", BASE_CONFIG), Arm("two", _config(delay_us=0)),
                              Arm("three", _config(instances=3))), {}, trials=2)
    result = ABResult(1, plan, {}, DONE)
    assert [result.title(a.name) for a in plan.arms][1:] == ["B (delay 500 → 0 µs)", "C (instances 1 → 3)"]
    assert result.findings("three") == ["C (instances 1 → 3) against A: not enough complete trials to say."]
