"""The trace judge on hand-made one-second windows: every expected value worked out by hand below."""
from __future__ import annotations

import pytest

from app.timeline.meter import MeasuredWindow
from app.experiments.trace.judge import TraceScore, allowed_over, judge, pooled, score
from loadgen.outcome import Outcome
from loadgen.stats import Bucket


def window(t0: float, lat_ms: list[float] = (), failed: int = 0, sent: int | None = None, good: int | None = None,
           seconds: float = 1.0) -> MeasuredWindow:
    """Return a one-second window: these answers (ms), failures, sends (default: one per request that ended) and good
    answers (default: every answer)."""
    b = Bucket()
    b.requests = b.sent = len(lat_ms) + failed if sent is None else sent
    b.outcomes[Outcome.OK] = len(lat_ms)
    b.outcomes[Outcome.TIMEOUT] = failed
    b.good = len(lat_ms) if good is None else good
    b.latencies.values.extend(v / 1000 for v in lat_ms)
    return MeasuredWindow(t0, t0 + seconds, {"default": b})


def test_goodput_counts_and_a_failure_slower_than_any_answer():
    windows = [window(100.0, [10] * 20),
               window(101.0, [10] * 19 + [200], failed=1, good=19),
               window(102.0)]
    s = score(windows, played_s=3.0, sla_ms=50, instances=1)
    print(s)
    assert (s.sent, s.answered, s.failed, s.good) == (41, 40, 1, 39)
    assert s.goodput_rps == pytest.approx(39 / 3)  # 13.0 good answers a played second
    # second 1: 21 ended = 19 × 10 ms, 200 ms, one failure (slowest). p99 sits at rank 0.99 × 20 = 19.8: between
    # the 200 ms answer and the failure, so over. Second 0 (20 × 10 ms) is under; second 2 sent nothing: under.
    assert (s.seconds_over, s.seconds, s.over_at_s) == (1, 3, (1.0,))
    assert s.few_seconds == 0


def test_a_second_of_few_requests_is_judged_by_its_slowest_and_a_stall_is_over():
    windows = [window(0.0, [10, 10, 10, 10, 60]),  # 5 ended (< 10): the slowest, 60 ms, is over 50
               window(1.0, [40] * 5),  # 5 ended, the slowest 40 ms: under
               window(2.0, [], sent=3),  # 3 sent, nothing ended: a stall, over
               window(3.0, [10] * 10)]  # 10 ended: p99 = 10 ms, under
    s = score(windows, played_s=4.0, sla_ms=50, instances=2)
    print(s)
    assert (s.seconds_over, s.few_seconds, s.over_at_s) == (2, 2, (0.0, 2.0))


def test_worst_minute_p99_merges_samples_never_averages_percentiles():
    # Shorter than a minute: the whole span. 200 samples: 198 × 10 ms, 2 × 100 ms; rank 0.99 × 199 = 197.01 falls
    # between 10 (index 197) and 100 (index 198): 10 + 0.01 × 90 = 10.9 ms. (The mean of the two windows' own p99s,
    # 10 and 100 ms, would say 55 ms.)
    windows = [window(0.0, [10] * 100), window(1.0, [10] * 98 + [100] * 2)]
    s = score(windows, played_s=2.0, sla_ms=50, instances=1)
    print(s)
    assert s.worst_minute_p99_ms == pytest.approx(10.9)
    assert s.worst_minute_at_s == 0.0
    assert s.p99_ms == pytest.approx(10.9)


def test_the_worst_minute_slides_in_one_second_steps():
    # 120 s of 100 answers each at 10 ms, but seconds 50-69 have 4 of their 100 at 200 ms. Tumbling minutes (0-59,
    # 60-119) each hold 40 slow of 6000: under 1 %, p99 10 ms. A sliding minute holding 61+ slow answers reaches
    # 200 ms at ranks 5939 and 5940 (rank 0.99 × 5999 = 5939.01): the first is seconds 6-65 (16 slow seconds, 64).
    windows = [window(float(i), [10] * 96 + [200] * 4 if 50 <= i < 70 else [10] * 100) for i in range(120)]
    s = score(windows, played_s=120.0, sla_ms=50, instances=1)
    print(s.worst_minute_p99_ms, s.worst_minute_at_s)
    assert s.worst_minute_p99_ms == pytest.approx(200.0)
    assert s.worst_minute_at_s == 6.0


def test_instance_seconds_count_the_played_span_only():
    windows = [window(0.0, [10]), window(1.0, [10]), window(2.0, [10])]  # the third second: the drain after the trace
    assert score(windows, played_s=2.0, sla_ms=50, instances=3).instance_seconds == pytest.approx(6.0)  # 3 × 2 s
    changed = score(windows, played_s=2.0, sla_ms=50, instances=[1, 2, 2])
    assert (changed.instance_seconds, changed.instances) == (pytest.approx(3.0), 2)  # 1 × 1 s + 2 × 1 s
    with pytest.raises(ValueError, match="one per window"):
        score(windows, played_s=2.0, sla_ms=50, instances=[1, 2])


def made(instances: int, over: int, goodput: float, played: float = 10.0, worst: float = 20.0) -> TraceScore:
    return TraceScore(sla_ms=50, played_s=played, measured_s=played, sent=100, answered=100, failed=0,
                      good=int(goodput * played), goodput_rps=goodput, p99_ms=worst, worst_minute_p99_ms=worst,
                      worst_minute_at_s=0.0, seconds_over=over, seconds=int(played), few_seconds=0,
                      instances=instances, instance_seconds=instances * played)


def test_the_cheapest_configuration_that_holds_wins_ties_to_goodput():
    # tolerance 0.1 of 10 played seconds: at most 1 second over holds
    scores = {"1 instance": made(1, 5, 80), "3 instances": made(3, 0, 100), "2 instances, delay 0": made(2, 1, 90),
              "2 instances, delay 500": made(2, 0, 95)}
    v = judge(scores, tolerance=0.1)
    print(v.reason)
    assert v.pick == "2 instances, delay 500"  # 2 is the lowest count that holds; of the two, 95 > 90 req/s
    assert v.holds == ("3 instances", "2 instances, delay 0", "2 instances, delay 500")
    assert "holds the SLA" in v.reason and "1 instance (5 of 10 s over the SLA)" in v.reason


def test_when_none_holds_the_best_goodput_wins():
    v = judge({"1 instance": made(1, 5, 80), "2 instances": made(2, 3, 85)}, tolerance=0.1)
    print(v.reason)
    assert (v.pick, v.holds) == ("2 instances", ())
    assert "no configuration held" in v.reason
    assert judge({}).pick is None


def test_allowed_seconds_and_pooled_scores():
    assert allowed_over(600, 0.01) == 6 and allowed_over(9, 0.25) == 2 and allowed_over(9, 0.1) == 0
    with pytest.raises(ValueError, match="tolerance"):
        allowed_over(10, 1.5)
    both = pooled([made(2, 1, 10, played=3, worst=30), made(2, 2, 5, played=2, worst=40)])
    # good 30 + 10 over 5 played seconds; seconds over summed; the worst minute the worse playback's
    assert (both.goodput_rps, both.seconds_over, both.worst_minute_p99_ms, both.instance_seconds) == (8.0, 3, 40, 10)
    assert TraceScore.from_dict(both.to_dict()) == both
