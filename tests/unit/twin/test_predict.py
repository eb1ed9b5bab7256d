"""Predictions: deterministic given a seed, intervals that hold their value, per-class figures, and speed."""
from __future__ import annotations


from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings
from app.twin import Calibration, Load, ClassShare, Window, predict, saturation
from app.twin.calibrate import reproduced

COST_US = {1: 4000, 2: 4500, 4: 5300, 8: 6900, 16: 9800, 32: 15500}


def _calibration(overhead_us: float | None = 400.0) -> Calibration:
    window = Window(1, tuple((b, 400, round(400 * t * 1e3)) for b, t in COST_US.items()), 400 * 63)
    return Calibration((window,), client_overhead_us=overhead_us)


def _settings(instances: int = 2, delay_us: int = 500, levels: int = 0) -> ModelSettings:
    return ModelSettings(max_batch_size=32, instance_groups=(InstanceGroup(instances),),
                         dynamic_batching=DynamicBatching((4, 8), delay_us, priority_levels=levels,
                                                          default_priority_level=levels))


def test_the_same_seed_gives_the_same_prediction():
    load = Load.poisson(600.0, 5.0)
    a, b = (predict(_calibration(), _settings(), load, seed=7, replications=3) for _ in range(2))
    other = predict(_calibration(), _settings(), load, seed=8, replications=3)
    assert a == b, "two predictions with seed 7 differ"
    assert other.p99_ms != a.p99_ms, f"seeds 7 and 8 gave the same p99 {a.p99_ms}"


def test_intervals_hold_their_value_and_widen_with_what_is_unknown():
    p = predict(_calibration(), _settings(), Load.poisson(600.0, 5.0), replications=3)
    for name in ("throughput_rps", "p50_ms", "p99_ms", "queue_ms", "compute_ms", "mean_batch", "rejected_share"):
        i = getattr(p, name)
        assert i.low <= i.value <= i.high, f"{name}: {i}"
    # Contention is assumed (one instance count measured) and 2 instances are asked: the edges must show it.
    assert p.p99_ms.high > 1.05 * p.p99_ms.value, f"p99 {p.p99_ms} with contention assumed"
    assert p.confidence.startswith("low") and any("never measured" in line for line in p.lacks), \
        f"{p.confidence}; {p.lacks}"
    assert abs(sum(share for _, share in p.histogram) - 1) < 1e-9, p.histogram


def test_throughput_follows_the_offered_rate_below_saturation():
    cal, settings = _calibration(), _settings()
    limit = saturation(cal, settings)
    p = predict(cal, settings, Load.poisson(0.5 * limit.value, 5.0), replications=3)
    assert abs(p.throughput_rps.value / (0.5 * limit.value) - 1) < 0.05, f"{p.throughput_rps} at half of {limit}"


def test_each_class_gets_its_own_figures():
    load = Load.poisson(900.0, 5.0).with_classes(ClassShare("interactive", 0.2, 1), ClassShare("batch", 0.8, 2))
    p = predict(_calibration(), _settings(instances=1, levels=2), load, replications=2)
    names = [c.name for c in p.classes]
    assert names == ["interactive", "batch"], names
    total = sum(c.throughput_rps.value for c in p.classes)
    assert abs(total / p.throughput_rps.value - 1) < 0.02, f"classes add up to {total}, all {p.throughput_rps}"


def test_latency_is_the_servers_when_the_client_overhead_is_unknown():
    load = Load.poisson(300.0, 5.0)
    with_client = predict(_calibration(400.0), _settings(), load, replications=1)
    server = predict(_calibration(None), _settings(), load, replications=1)
    assert abs(with_client.p50_ms.value - server.p50_ms.value - 0.4) < 1e-6, \
        f"p50 with a 0.4 ms client overhead {with_client.p50_ms}, without {server.p50_ms}"
    assert any("client overhead unknown" in line for line in server.lacks), server.lacks


def _window(client_rps: float) -> Window:
    """A window of one instance, 5 s, batches of 8 at 6.9 ms (at most ~1,160 req/s), its clients' rate as given."""
    return Window(1, ((8, 400, 400 * 6_900_000),), 3200, seconds=5.0, client_rps=client_rps, outside_us=2000.0)


def test_a_window_the_twin_cannot_reproduce_caps_throughput_and_says_so():
    """32 clients got 640 answers/s where the twin, on those executions, expects far more: the host holds them back."""
    settings = _settings(instances=1)
    new = Calibration((_window(640.0),), client_overhead_us=2000.0)
    checked = reproduced(None, new, settings, Load.closed(32, 10.0, warmup_s=2.0))
    assert checked.windows[0].expected_rps > 800.0, checked.windows[0]
    cal = checked
    assert cal.host_ceiling is not None and cal.host_ceiling[0] == 640.0, cal.host_ceiling
    limit = saturation(cal, settings, replications=1)
    assert limit.high <= 640.0, f"saturation {limit} above the 640 req/s the clients reached"
    p = predict(cal, settings, Load.poisson(1500.0, 3.0), replications=1)
    assert p.throughput_rps.value <= 640.0 and p.confidence.startswith("low"), f"{p.throughput_rps}; {p.confidence}"
    assert any(line.startswith("host-bound") for line in p.lacks), p.lacks
    assert abs(sum(c.throughput_rps.value for c in p.classes) / p.throughput_rps.value - 1) < 1e-9, p.classes


def test_a_window_the_twin_reproduces_is_no_host_limit():
    """The clients got what the twin expects of their traffic: the execution is the limit, nothing is capped."""
    settings = _settings(instances=1)
    first = reproduced(None, Calibration((_window(1.0),), client_overhead_us=2000.0), settings,
                       Load.closed(32, 10.0, warmup_s=2.0))
    expected = first.windows[0].expected_rps  # what the twin expects of 32 clients: give the window exactly that
    cal = reproduced(None, Calibration((_window(expected),), client_overhead_us=2000.0), settings,
                     Load.closed(32, 10.0, warmup_s=2.0))
    assert cal.host_ceiling is None, (cal.host_ceiling, cal.windows)
    p = predict(cal, settings, Load.poisson(200.0, 3.0), replications=1)
    assert not any(line.startswith("host-bound") for line in p.lacks), p.lacks
    # A slower window falling short (its clients' overhead varied) caps nothing below the rate already reached.
    slow = Window(1, ((1, 400, 400 * 4_000_000),), 400, seconds=5.0, client_rps=100.0, expected_rps=200.0)
    both = Calibration((*cal.windows, slow), client_overhead_us=2000.0)
    assert both.host_ceiling is None, both.host_ceiling
