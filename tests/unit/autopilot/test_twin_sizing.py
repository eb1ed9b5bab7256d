"""The autopilot asks the twin before it adds or gives back instances; advisory mode shows, applies nothing."""
from __future__ import annotations

from app.autopilot.pilot import ADVISED, APPLIED, Autopilot, DecisionOutcome
from app.autopilot.rules import Bounds
from app.autopilot.twin_sizing import TwinSizer
from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings
from app.timeline.figures import Figures
from app.timeline.sides import ClientFigures, ServerFigures
from app.twin.predict import Interval

SLA_MS = 50.0


class _Prediction:
    def __init__(self, p99_high: float) -> None:
        self.p99_ms = Interval(p99_high * 0.9, p99_high * 0.8, p99_high)
        self.confidence = "high: measured"
        self.host_cpu = None  # the server, not the host, is the limit


def _predictor(capacity_per_instance: float):
    """A twin whose p99 grows sharply once the rate nears the instances' capacity."""
    asked = []

    def predict(settings: ModelSettings, rate: float) -> _Prediction:
        n = sum(g.count for g in settings.instance_groups)
        asked.append((n, rate))
        busy = rate / (n * capacity_per_instance)
        return _Prediction(5.0 / max(1e-6, 1 - busy) if busy < 1 else 10_000.0)
    predict.asked = asked
    return predict


def _settings(instances: int) -> ModelSettings:
    return ModelSettings(max_batch_size=8, instance_groups=(InstanceGroup(instances),),
                         dynamic_batching=DynamicBatching((4, 8), 0))


def _window(t: float, p99: float, offered: float, served: float, queue_share: float = 0.5) -> Figures:
    client = ClientFigures.from_dict({"p99_ms": p99, "p50_ms": p99 / 3, "latency_n": 500, "ok": int(served * 5),
                                      "offered_rps": offered, "throughput_rps": served, "sent": int(offered * 5)})
    request_us = p99 * 300
    server = ServerFigures.from_dict({"request_us": request_us, "queue_us": request_us * queue_share,
                                      "queue_share": queue_share, "request_rps": served, "avg_batch": 2.0})
    return Figures("m", t - 5, t, server, {"all": client, "default": client})


def test_the_fewest_instances_the_twin_says_hold_are_added_not_a_linear_guess():
    twin = _predictor(capacity_per_instance=100.0)
    pilot = Autopilot(Bounds(SLA_MS, max_instances=6, delays_us=()), clock=lambda: 100.0, sizer=TwinSizer(twin))
    decision = pilot.decide(_window(100.0, 60.0, 330.0, 100.0), _settings(1), 100.0)
    # 330/s: 4 instances (busy 0.83: p99 up to 29 ms) is the fewest under 80 % of the SLA; 3 are 110 % busy
    assert decision.knobs == {"instance_count": 4}, (decision.reason, twin.asked)
    assert "the twin expects p99 up to" in decision.reason and decision.figures["twin"]["holds"], decision.figures


def test_a_give_back_the_twin_says_would_break_the_sla_is_held():
    twin = _predictor(capacity_per_instance=100.0)
    clock = [0.0]
    pilot = Autopilot(Bounds(SLA_MS, max_instances=4, delays_us=(), dwell_s=2.0), clock=lambda: clock[0],
                      sizer=TwinSizer(twin))
    decisions = []
    for k in range(1, 8):  # quiet windows (p99 10 ms) at 180/s on 2 instances: 1 instance would be 180 % busy
        clock[0] = 1000.0 + 10 * k
        decisions.append(pilot.decide(_window(clock[0], 10.0, 180.0, 180.0, 0.05), _settings(2),
                                      clock[0]))
    assert not any(d.changes for d in decisions), [d.reason for d in decisions]
    assert any("−1 instance held: the twin expects" in d.reason for d in decisions), [d.reason for d in decisions]


def test_without_an_answer_from_the_twin_the_rules_decide_alone():
    def silent(settings, rate):
        raise ValueError("the twin has seen no execution of m yet")
    pilot = Autopilot(Bounds(SLA_MS, max_instances=6, delays_us=()), clock=lambda: 100.0, sizer=TwinSizer(silent))
    alone = Autopilot(Bounds(SLA_MS, max_instances=6, delays_us=()), clock=lambda: 100.0)
    window = _window(100.0, 60.0, 330.0, 100.0)
    assert pilot.decide(window, _settings(1), 100.0).knobs == alone.decide(window, _settings(1), 100.0).knobs


def test_advice_keeps_the_knobs_served_and_waits_a_dwell_before_the_same_advice():
    clock = [100.0]
    pilot = Autopilot(Bounds(SLA_MS, max_instances=6, delays_us=(), dwell_s=10.0), clock=lambda: clock[0])
    first = pilot.decide(_window(100.0, 60.0, 330.0, 100.0), _settings(1), 100.0)
    assert first.changes
    pilot.record(DecisionOutcome(ADVISED, t=100.0))
    clock[0] = 108.0  # within the dwell: nothing asked again, and the unchanged knobs are no one else's change
    again = pilot.decide(_window(108.0, 60.0, 330.0, 100.0), _settings(1), 108.0)
    assert not again.changes and not pilot.stopped, again.reason
    # held by its own advice, and says so: nothing was changed
    assert "the last advice was 8 s ago" in again.reason and "change was" not in again.reason, again.reason
    clock[0] = 115.0
    later = pilot.decide(_window(115.0, 60.0, 330.0, 100.0), _settings(1), 115.0)
    assert later.changes and not pilot.stopped, later.reason
    pilot.record(DecisionOutcome(APPLIED, t=115.0))


def test_advice_not_acted_on_stands_while_the_twin_puts_it_near_the_line_and_moves_when_clearly_off():
    """The twin's line is 80 % of the SLA (40 ms); its p99 for n instances at r/s is 5 / (1 - r / (100 n)) ms. Near
    the line, advice given before and not acted on stands (it flipped between +1 and +3 from one window to the
    next); clear of the band, it follows the twin."""
    clock = [100.0]
    pilot = Autopilot(Bounds(SLA_MS, max_instances=6, delays_us=(), dwell_s=10.0), clock=lambda: clock[0],
                      sizer=TwinSizer(_predictor(capacity_per_instance=100.0)))
    advised = []
    for t, offered in ((100.0, 400.0), (115.0, 345.0), (130.0, 320.0), (145.0, 352.0), (160.0, 360.0)):
        clock[0] = t
        decision = pilot.decide(_window(t, 60.0, offered, 100.0), _settings(1), t)
        assert decision.changes, decision.reason
        pilot.record(DecisionOutcome(ADVISED, t=t))
        advised.append((offered, decision.knobs["instance_count"], decision.reason))
    counts = [n for _, n, _ in advised]
    # 400/s: 5 (25 ms). 345/s: 4 would do at 36.4 ms, within 10 % of the line: 5 stands. 320/s: 4 at 25 ms, clearly
    # under: 4. 352/s: 4 is 41.7 ms, 4 % over: 4 stands. 360/s: 4 is 50 ms, 25 % over: 5.
    assert counts == [5, 5, 4, 4, 5], advised
    assert "the advice stands (4 would hold at 36.4 ms" in advised[1][2], advised[1][2]
    assert "the advice stands (4% over the line of 40.0 ms" in advised[3][2], advised[3][2]
    assert "the advice stands" not in advised[2][2] + advised[4][2], advised
    sizer = TwinSizer(_predictor(capacity_per_instance=100.0))
    assert sizer.fewest(_settings(1), 345.0, SLA_MS, 2, 6).instances == 4  # no advice before: the fewest that hold
    assert sizer.fewest(_settings(1), 345.0, SLA_MS, 2, 6, advised=5).instances == 5
    assert sizer.fewest(_settings(1), 345.0, SLA_MS, 2, 4, advised=5).instances == 4, "advice outside the bounds"


class _LoadLab:
    """A lab whose traffic to the model is the load given (None: none)."""

    def __init__(self, load) -> None:
        self.load = load

    def twin_load(self, model: str, rate: float | None = None, concurrency: int | None = None):
        return self.load


def test_an_answer_names_the_load_it_is_for_a_closed_loops_clients_not_a_rate():
    from app.autopilot.twin_sizing import lab_load_words
    from app.twin.load import Load

    sizer = TwinSizer(_predictor(100.0), load_words=lab_load_words(_LoadLab(Load.closed(16, 20.0)), "m"))
    answer = sizer.verdict(_settings(1), 2, 80.0, SLA_MS)
    # the twin predicted the lab's loop of 16 clients, whose rate follows the instances: not "at 80/s"
    assert "closed loop of 16 in flight" in answer.words and "at 80/s" not in answer.words, answer.words
    sizer = TwinSizer(_predictor(100.0), load_words=lab_load_words(_LoadLab(Load.poisson(80.0, 20.0)), "m"))
    assert "at 80/s" in sizer.verdict(_settings(1), 2, 80.0, SLA_MS).words
    assert "at 80/s" in TwinSizer(_predictor(100.0)).verdict(_settings(1), 2, 80.0, SLA_MS).words
    sizer = TwinSizer(_predictor(100.0), load_words=lab_load_words(_LoadLab(None), "m"))  # traffic from elsewhere
    assert "at 80/s" in sizer.verdict(_settings(1), 2, 80.0, SLA_MS).words


def test_where_the_host_is_the_limit_and_no_count_holds_the_twin_sizes_nothing():
    """A host-bound twin (its predictions carry the host's CPU) whose p99 holds at no count: the autopilot takes the
    rules' step (arrivals outrun service: 330/s where 100/s were served, 1 → 4), not the most the bounds allow — more instances add their own load to the host's CPUs — and
    says the twin's answer beside it. The same twin without the host's figure sizes to the most, as before."""
    def bound(host: float | None):
        def predict(settings: ModelSettings, rate: float):
            p = _Prediction(120.0)  # over 80 % of the 50 ms SLA at every count
            p.host_cpu = host
            return p
        return predict
    window = _window(100.0, 60.0, 330.0, 100.0)
    host = Autopilot(Bounds(SLA_MS, max_instances=6, delays_us=()), clock=lambda: 100.0, sizer=TwinSizer(bound(0.82)))
    decision = host.decide(window, _settings(1), 100.0)
    alone = Autopilot(Bounds(SLA_MS, max_instances=6, delays_us=()), clock=lambda: 100.0).decide(
        window, _settings(1), 100.0)
    assert decision.knobs == alone.knobs == {"instance_count": 4}, (decision.reason, alone.reason)  # 330/s over 100/s
    assert "the host, not the instances, is the limit" in decision.reason, decision.reason
    assert "the host's CPUs about 82% busy" in decision.reason and decision.figures["twin"]["holds"] is False
    server = Autopilot(Bounds(SLA_MS, max_instances=6, delays_us=()), clock=lambda: 100.0,
                       sizer=TwinSizer(bound(None)))
    assert server.decide(window, _settings(1), 100.0).knobs == {"instance_count": 6}
