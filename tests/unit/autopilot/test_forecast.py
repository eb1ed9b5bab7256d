"""The autopilot with a forecast: the curve's look-ahead (smoothed means, the two horizons), sizing before a crowd
arrives, giving back when the forecast's longer horizon needs fewer, the reactive rules still in charge when the
forecast is wrong, and a run's recorded outlooks replayed to the same decisions (no server, no timing)."""
from __future__ import annotations

import pytest

from app.autopilot.pilot import Autopilot, Bounds
from app.autopilot.forecast import Forecast, ForecastClock, ForecastError, Outlook
from app.autopilot.job import later_s, record_of, replay
from app.autopilot.rules import AHEAD_HEADROOM, instances_for, reload_steps
from app.lab.ports import TrafficState
from loadgen.rate_trace.shipped import make_shipped_traces
from tests.unit.autopilot.test_pilot import SLA, T0, applied, fig, settings

MODEL = "gpu_sim"
CROWD = Forecast(((0.0, 100.0), (10.0, 800.0), (20.0, 100.0), (60.0, 100.0)), lead_s=3.0, instance_rps=300.0,
                 source="yesterday")


def test_the_look_ahead_is_the_highest_one_second_mean_in_each_horizon():
    assert CROWD.rate_at(5) == 100 and CROWD.rate_at(10) == 800 and CROWD.rate_at(61) == 0
    far = CROWD.outlook(0.0, 8.0)
    # the crowd is 10 s away: past both horizons
    assert far.soon_rps == pytest.approx(100) and far.later_rps == pytest.approx(100), far
    near = CROWD.outlook(5.0, 8.0)  # the crowd is 5 s away: within the longer horizon only
    assert near.soon_rps == pytest.approx(100) and near.later_rps == pytest.approx(800), near
    at = CROWD.outlook(8.0, 8.0)
    assert at.soon_rps == pytest.approx(800) and at.lead_s == 3.0 and at.later_s == 8.0, at
    # a burst shorter than the smoothing span counts at its mean over the span: it queues, it needs no instance
    blip = Forecast(((0, 100.0), (5, 1000.0), (5.25, 100.0), (30, 100.0)))
    assert blip.outlook(4.0, 3.0).soon_rps == pytest.approx(100 * 0.75 + 1000 * 0.25)
    assert CROWD.outlook(61.0, 8.0) is None  # past its end it knows nothing
    assert Outlook.from_dict(at.to_dict()) == at and Outlook.from_dict(None) is None


@pytest.mark.parametrize("kwargs, words", [
    ({"curve": ((0, 1.0),)}, "two or more"), ({"curve": ((0, 1.0), (0, 2.0))}, "increase"),
    ({"curve": ((0, -1.0), (1, 2.0))}, "non-negative"), ({"lead_s": 0}, "lead_s"),
    ({"instance_rps": 0}, "instance_rps"),
])
def test_a_bad_forecast_says_the_fix(kwargs, words):
    with pytest.raises(ForecastError, match=words):
        Forecast(**{"curve": ((0, 1.0), (1, 2.0)), **kwargs})


def test_the_clock_aligns_the_curve_to_the_playbacks_start():
    start = [None]
    clock = ForecastClock(CROWD, lambda: start[0])
    assert clock.outlook(T0, 8.0) is None  # not started: it says nothing
    start[0] = T0
    assert clock.outlook(T0 + 8.0, 8.0).soon_rps == pytest.approx(800)
    assert clock.outlook(T0 - 1.0, 8.0) is None


def test_it_adds_before_the_crowd_arrives_sized_for_it_and_says_so():
    ap = Autopilot(Bounds(SLA, 1, 4, (), 4.0), clock=lambda: T0)
    s = settings(1, 500)
    quiet = fig(12.0, 5, seconds=3, offered=100, served=100)
    assert ap.decide(quiet, s, T0 + 5, outlook=CROWD.outlook(5.0, 12.0)).kind == "hold"
    d = ap.decide(fig(12.0, 8, seconds=3, offered=100, served=100), s, T0 + 8, outlook=CROWD.outlook(8.0, 12.0))
    want = instances_for(800, 300)
    assert want == 4 and 800 * AHEAD_HEADROOM / 300 <= want, want
    assert d.kind == "add" and d.knobs == {"instance_count": 4}, d
    assert ("the forecast (yesterday) expects 800/s within 3 s, 300/s per instance: +3 instances (1 → 4) before "
            "it arrives") in d.reason, d.reason
    assert d.figures["forecast"]["soon_rps"] == pytest.approx(800), d.figures


def test_it_gives_back_when_the_longer_horizon_needs_fewer_without_waiting_out_the_hysteresis():
    bounds = Bounds(SLA, 1, 4, (), 4.0)
    ap = Autopilot(bounds, clock=lambda: T0)
    s = settings(1, 500)
    d = ap.decide(fig(12.0, 8, seconds=3, offered=100, served=100), s, T0 + 8, outlook=CROWD.outlook(8.0, 12.0))
    s = applied(ap, s, d, 8.5)
    # in the crowd, p99 well under the SLA: the forecast still needs 4 for its longer horizon
    d = ap.decide(fig(20.0, 15, seconds=3, offered=800, served=800), s, T0 + 15,
                  outlook=CROWD.outlook(15.0, later_s(bounds)))
    assert d.kind == "hold", d.reason
    # the crowd has passed: 100/s for the next 12 s needs 1 instance at 300/s each: one back per dwell
    d = ap.decide(fig(10.0, 21, seconds=3, offered=100, served=100), s, T0 + 21,
                  outlook=CROWD.outlook(21.0, later_s(bounds)))
    assert d.kind == "remove" and d.knobs == {"instance_count": 3}, d.reason
    assert "expects at most 100/s for the next 12 s, which 1 instance carries at 300/s each with a third spare: " \
        "−1 instance (4 → 3)" \
        in d.reason, d.reason
    s = applied(ap, s, d, 21.2)
    d = ap.decide(fig(10.0, 23, seconds=1.5, offered=100, served=100), s, T0 + 23,
                  outlook=CROWD.outlook(23.0, later_s(bounds)))
    assert d.kind == "hold" and "dwell" in d.reason, d.reason  # the dwell still paces every change


def test_a_window_near_the_sla_holds_a_planned_step_down_back():
    bounds = Bounds(SLA, 1, 4, (), 4.0)
    ap = Autopilot(bounds, clock=lambda: T0)
    s = settings(2, 500)
    # the forecast says 100/s, but the window is near the SLA (the forecast was wrong): the reactive rules act
    d = ap.decide(fig(45.0, 10, seconds=3, offered=100, served=100), s, T0 + 10,
                  outlook=CROWD.outlook(30.0, later_s(bounds)))
    assert d.kind == "add" and d.knobs == {"instance_count": 3} and "p99 45.0 ms" in d.reason, d.reason
    s = applied(ap, s, d, 10.5)
    d = ap.decide(fig(10.0, 16, seconds=3, offered=100, served=100), s, T0 + 16,
                  outlook=CROWD.outlook(36.0, later_s(bounds)))
    assert d.kind == "hold" and "capacity was needed" in d.reason, d.reason


def test_without_a_rate_per_instance_it_sizes_by_the_most_one_instance_carried_under_the_sla():
    ap = Autopilot(Bounds(SLA, 1, 4, (), 4.0), clock=lambda: T0)
    unknown = Forecast(CROWD.curve, lead_s=3.0)
    d = ap.decide(fig(12.0, 3, seconds=3, n=10, offered=100, served=100), settings(1, 500), T0 + 3,
                  outlook=unknown.outlook(8.0, 12.0))
    assert d.kind == "wait", d.reason  # too few answers: nothing carried is known yet, nothing sized
    assert ap._instance_rps(unknown.outlook(8.0, 12.0)) is None
    # windows under 80 % of the SLA teach what one instance carries: the most, per instance (a lower bound)
    ap.decide(fig(30.0, 6, seconds=3, offered=250, served=250), settings(1, 500), T0 + 6,
              outlook=unknown.outlook(0.0, 12.0))
    assert ap._instance_rps(unknown.outlook(0.0, 12.0)) == 250
    near = Autopilot(Bounds(SLA, 1, 4, (), 4.0), clock=lambda: T0)
    near.decide(fig(45.0, 7, seconds=3, offered=400, served=400), settings(1, 500), T0 + 7)
    assert near._instance_rps(None) is None  # a window near the SLA teaches nothing about carrying within it
    d = ap.decide(fig(12.0, 8, seconds=3, offered=100, served=100), settings(1, 500), T0 + 8,
                  outlook=unknown.outlook(8.0, 12.0))
    assert d.kind == "add" and d.knobs == {"instance_count": 4}, d.reason  # 800 × 1.2 / 250: 4
    assert "250/s per instance" in d.reason, d.reason


def test_a_quiet_step_down_waits_while_the_forecast_needs_the_count():
    bounds = Bounds(SLA, 1, 4, (), 4.0)
    ap = Autopilot(bounds, clock=lambda: T0)
    rising = Forecast(((0.0, 100.0), (30.0, 350.0), (60.0, 350.0)), instance_rps=300.0)  # 2 carry it
    s = settings(2, 500)
    reasons = [ap.decide(fig(10.0, t, seconds=3, offered=100, served=100), s, T0 + t,
                         outlook=rising.outlook(t + 13.0, later_s(bounds))).reason for t in (20, 23, 26, 29)]
    assert not any("−1 instance (2 → 1)" in r and "held" not in r for r in reasons), reasons
    assert any("−1 instance held: the forecast (forecast) expects 350/s" in r for r in reasons), reasons


def test_a_recorded_run_with_its_outlooks_replays_to_the_same_decisions():
    bounds = Bounds(SLA, 1, 4, (), 4.0)
    ap = Autopilot(bounds, clock=lambda: T0)
    s = settings(1, 500)
    records = []
    for t, offered, p99 in ((5, 100, 12.0), (8, 100, 12.0), (15, 800, 20.0), (21, 100, 10.0), (26, 100, 10.0)):
        window = fig(p99, t, seconds=3, offered=offered, served=offered)
        outlook = CROWD.outlook(float(t), later_s(bounds))
        d = ap.decide(window, s, T0 + t, outlook=outlook)
        records.append(record_of(window, s, d, "", outlook))
        if d.changes:
            s = applied(ap, s, d, t + 0.3)
            records[-1]["applied_t"] = T0 + t + 0.3
    again = replay(records, bounds, settings(1, 500))
    assert [d.reason for d in again] == [r["decision"]["reason"] for r in records]
    assert [r["decision"]["kind"] for r in records].count("add") == 1, records


def test_a_shipped_trace_as_forecast_sizes_its_crowd():
    crowd = make_shipped_traces(seed=128)["flash_crowd"]  # another day: the same shape, other noise
    f = Forecast.of_trace(crowd, crowd.duration_s / 120, 2.0, instance_rps=340.0, source="another day")
    peaks = [f.outlook(float(t), 12.0).soon_rps for t in range(0, 120)]
    assert max(peaks) > 4 * min(peaks), (min(peaks), max(peaks))
    assert instances_for(max(peaks), 340.0) == 4 and instances_for(min(peaks), 340.0) == 1


class _Traffic:
    """The lab's traffic verb (app.lab.ports.Traffic.traffic) that traffic_forecast asks at every window."""

    def __init__(self, spec, running: bool, started_at: float | None) -> None:
        self.spec, self.running, self.started_at = spec, running, started_at

    def __call__(self) -> TrafficState:
        return TrafficState(self.running, self.spec, self.started_at, self.started_at, 1)


def test_the_traffic_a_lab_plays_is_its_forecast_while_that_run_lasts():
    from app.autopilot.forecast import traffic_forecast
    from loadgen.rate_trace.trace_load import trace_load
    from loadgen.spec import LoadSpec, Mode, TrafficClass

    base = LoadSpec(mode=Mode.OPEN, model="gpu_sim", rate=100.0, duration_s=60.0, classes=(TrafficClass(),))
    spec = trace_load(base, "flash_crowd", 30.0, 2.0)
    traffic = _Traffic(spec, True, T0)
    clock = traffic_forecast(traffic, 3.0, 340.0)
    assert clock is not None and "flash_crowd" in clock.forecast.source and clock.forecast.instance_rps == 340.0
    crowd = max(clock.outlook(T0 + t, 12.0).soon_rps for t in range(0, 120))
    assert crowd > 4 * clock.outlook(T0 + 1.0, 3.0).soon_rps, crowd  # the crowd, at the played scale
    traffic.started_at = T0 + 500.0  # another run began: this forecast no longer knows where it is
    assert clock.outlook(T0 + 600.0, 12.0) is None
    assert traffic_forecast(_Traffic(base, True, T0)) is None  # a steady load has nothing ahead to know
    assert traffic_forecast(_Traffic(spec, False, None)) is None  # nothing running


def test_an_add_covers_the_rate_until_a_next_change_may_follow():
    # a surge in two steps: the lead sees the first, the dwell after the add would hold the second one back
    ramp = Forecast(((0.0, 100.0), (10.0, 600.0), (12.0, 900.0), (30.0, 100.0), (60.0, 100.0)), lead_s=3.0,
                    instance_rps=300.0)
    bounds = Bounds(SLA, 1, 4, (), 4.0)
    outlook = ramp.outlook(8.0, later_s(bounds), bounds.dwell_s)
    assert outlook.soon_rps == pytest.approx(600) and outlook.cover_rps == pytest.approx(900), outlook
    assert outlook.cover_s == 7.0 and outlook.later_s == 12.0, outlook
    d = Autopilot(bounds, clock=lambda: T0).decide(fig(12.0, 8, seconds=3, offered=100, served=100), settings(1, 500),
                                                   T0 + 8, outlook=outlook)
    assert d.kind == "add" and d.knobs == {"instance_count": 4}, d.reason
    assert "expects 600/s within 3 s and 900/s within 7 s (before a next change may follow)" in d.reason, d.reason
    # the dwell does not move when an add is due: nothing is due 5 s before the surge, only within the lead
    early = ramp.outlook(5.0, later_s(bounds), bounds.dwell_s)
    d = Autopilot(bounds, clock=lambda: T0).decide(fig(12.0, 5, seconds=3, offered=100, served=100), settings(1, 500),
                                                   T0 + 5, outlook=early)
    assert d.kind == "hold", d.reason
    assert Outlook.from_dict(outlook.to_dict()) == outlook


def test_between_the_add_and_the_give_back_thresholds_it_holds():
    # 2 instances at 300/s carry 480/s with a fifth spare (no add to 3), but not with a third (no give back from 3):
    # a rate near a boundary must not remove and re-add an instance under load
    flat = Forecast(((0.0, 480.0), (60.0, 480.0)), instance_rps=300.0)
    bounds = Bounds(SLA, 1, 4, (), 4.0)
    d = Autopilot(bounds, clock=lambda: T0).decide(fig(20.0, 10, seconds=3, offered=480, served=480), settings(3, 500),
                                                   T0 + 10, outlook=flat.outlook(10.0, later_s(bounds), 4.0))
    assert d.kind == "hold", d.reason
    d = Autopilot(bounds, clock=lambda: T0).decide(fig(20.0, 10, seconds=3, offered=480, served=480), settings(2, 500),
                                                   T0 + 10, outlook=flat.outlook(10.0, later_s(bounds), 4.0))
    assert d.kind == "hold", d.reason


def test_an_add_ahead_goes_one_instance_per_reload_and_an_add_under_pressure_in_one():
    bounds = Bounds(SLA, 1, 4, (), 4.0)
    d = Autopilot(bounds, clock=lambda: T0).decide(fig(12.0, 8, seconds=3, offered=100, served=100), settings(1, 500),
                                                   T0 + 8, outlook=CROWD.outlook(8.0, later_s(bounds), 4.0))
    assert d.kind == "add" and d.stepwise and d.reason.endswith("(1 → 4) before it arrives, one per reload"), d
    assert d.to_dict()["stepwise"] is True
    assert reload_steps(1, d.knobs, d.stepwise) == [{"instance_count": 2}, {"instance_count": 3},
                                                     {"instance_count": 4}]
    # arrivals outrunning service: as many as the shortfall asks, in one reload (a surge already here does not wait)
    pressed = Autopilot(bounds, clock=lambda: T0).decide(
        fig(90.0, 8, seconds=3, queue_us=9000, request_us=10000, offered=600, served=200), settings(1, 500), T0 + 8)
    assert pressed.kind == "add" and pressed.knobs["instance_count"] >= 3 and not pressed.stepwise, pressed
    assert reload_steps(1, pressed.knobs, pressed.stepwise) == [pressed.knobs]
    # one instance more, or another knob with it, is one reload
    assert reload_steps(2, {"instance_count": 3}, True) == [{"instance_count": 3}]
    # only as many reloads as fit in the lead: the last takes the rest
    assert [k["instance_count"] for k in reload_steps(1, {"instance_count": 6}, True, most=3)] == [2, 3, 6]
    assert reload_steps(1, {"instance_count": 6}, True, most=1) == [{"instance_count": 6}]
    assert reload_steps(1, {"instance_count": 3, "max_queue_delay_microseconds": 100}, True) == [
        {"instance_count": 2, "max_queue_delay_microseconds": 100},
        {"instance_count": 3, "max_queue_delay_microseconds": 100}]
