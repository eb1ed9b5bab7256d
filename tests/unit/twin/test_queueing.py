"""The twin against queueing theory where exact answers exist: M/D/1, saturation of c servers, Little's law."""
from __future__ import annotations

import statistics
from dataclasses import asdict
from random import Random

import pytest

from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings
from app.twin import Batcher, Calibration, Costs, Load, Policy, Window, saturation, simulate

SERVICE_US = 1000.0


def _exact(service_us, sizes=(1,), instances: int = 1, share: float = 0.0) -> Calibration:
    """A calibration whose windows ran each size 1,000 times in exactly service_us(size) µs, no spread."""
    cost = service_us if callable(service_us) else (lambda b: service_us)
    window = Window(instances, tuple((b, 1000, round(1000 * cost(b) * 1e3)) for b in sizes), 1000 * sum(sizes))
    return Calibration((window,), client_overhead_us=0.0, prior_share=share, prior_note="exact", cv=0.0)


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_md1_mean_wait_is_rho_s_over_2_1_minus_rho(rho):
    """One instance, no batching, Poisson arrivals, constant service: the mean queue wait of M/D/1."""
    costs = Costs.table(lambda b: SERVICE_US, 1)
    load = Load.poisson(rho / (SERVICE_US * 1e-6), 20.0)
    waits = [simulate(Batcher(), costs, load, Random(seed)).figures().queue_ms for seed in range(5)]
    theory = rho * SERVICE_US / 1e3 / (2 * (1 - rho))
    mean = statistics.mean(waits)
    # 20 seeds of 20 s: one run's mean wait has sd 3.5 % of theory at rho 0.5, 6 % at 0.8; 5 runs: 4 standard errors.
    margin = 4 * {0.5: 0.035, 0.8: 0.06}[rho] * theory / 5 ** 0.5
    assert abs(mean - theory) <= margin, f"rho {rho}: mean wait {mean:.4f} ms over 5 seeds {waits}, M/D/1 says " \
                                         f"{theory:.4f} ± {margin:.4f}"


def test_event_loop_matches_the_fast_path_on_the_same_arrivals():
    """The event loop (several levels) and the one-pass path (requests alone) agree request for request, with
    spread, input/output time and a shared device."""
    costs = Costs.table(lambda b: SERVICE_US, 1, cv=0.3, io_us=50.0, share=0.6)
    event_loop = Batcher(instances=3, levels=2, policies=(Policy(), Policy()))
    load = Load.poisson(1500.0, 5.0)
    for seed in (1, 2):
        fast = asdict(simulate(Batcher(instances=3), costs, load, Random(seed)).figures())
        event = asdict(simulate(event_loop, costs, load, Random(seed)).figures())
        assert fast == pytest.approx(event, rel=1e-9), f"seed {seed}: fast path {fast} vs event loop {event}"



def test_the_device_goes_to_the_execution_that_asks_for_it_first():
    """A short execution started after a long one, on another instance, reaches the shared device first and is not
    held behind the long one's turn (gpu_sim's lock is taken when asked for, not when the execution began)."""
    # A batch of 4 costs 10 ms (5 ms on its instance, then 5 on the device); one request alone 1 ms (0.5 + 0.5).
    costs = Costs.table(lambda b: 1000.0 if b == 1 else 10000.0, 4, share=0.5)
    batcher = Batcher(instances=2, max_batch=4, preferred=(4,), batching=True)
    # Four at once make the long batch; one more, 1 ms later, runs alone on the other instance.
    run = simulate(batcher, costs, Load.replay((0.0, 0.0, 0.0, 0.0, 0.001), 0.1), Random(1))
    latency_ms = ((run.done - run.arrival) * 1e3).tolist()
    assert latency_ms[4] == pytest.approx(1.0), f"the short execution took {latency_ms[4]:.3f} ms; alone it is 1 ms " \
                                                "and it asked for the device 3.5 ms before the long one"
    assert latency_ms[:4] == pytest.approx([10.0] * 4), f"the long batch: {latency_ms[:4]} ms"


@pytest.mark.parametrize("instances", [1, 2, 4])
def test_saturation_is_instances_over_service_time(instances):
    """Unbatched c instances with no shared device saturate at c / S (M/M/c-like capacity)."""
    settings = ModelSettings(instance_groups=(InstanceGroup(instances),))
    got = saturation(_exact(SERVICE_US), settings)
    theory = instances / (SERVICE_US * 1e-6)
    # Under overload every instance is always busy: only the window's edges (a partial execution) differ.
    assert abs(got.value / theory - 1) < 0.01, f"{instances} instances: saturation {got} vs c/S = {theory:.0f}/s"


def test_saturation_with_batches_is_instances_times_max_batch_over_its_time():
    """Under overload the batcher fills max_batch_size; c instances answer c·B/t(B) per second."""
    settings = ModelSettings(max_batch_size=8, instance_groups=(InstanceGroup(2),),
                             dynamic_batching=DynamicBatching((4,), 1000))
    cal = _exact(lambda b: 500 + 250 * b, sizes=(1, 2, 4, 8))
    got = saturation(cal, settings)
    theory = 2 * 8 / ((500 + 250 * 8) * 1e-6)
    assert abs(got.value / theory - 1) < 0.01, f"saturation {got} vs 2·8/t(8) = {theory:.0f}/s"


def test_saturation_with_a_shared_device_is_one_over_its_share():
    """Four instances whose executions hold one device half their time cannot pass 1 / (0.5·S)."""
    settings = ModelSettings(instance_groups=(InstanceGroup(4),))
    got = saturation(_exact(SERVICE_US, share=0.5), settings)
    theory = 1 / (0.5 * SERVICE_US * 1e-6)
    assert abs(got.value / theory - 1) < 0.01, f"saturation {got} vs 1/(share·S) = {theory:.0f}/s"


@pytest.mark.parametrize("clients", [1, 8, 32])
def test_closed_loop_throughput_is_clients_over_response_time(clients):
    """Little's law: N clients, each with one request in flight, answer N / (response time) per second."""
    costs = Costs.table(lambda b: 2000 + 300 * b, 16, cv=0.1, share=0.3)
    batcher = Batcher(instances=2, max_batch=16, preferred=(4, 8), delay_s=0.0005, batching=True)
    run = simulate(batcher, costs, Load.closed(clients, 10.0, warmup_s=1.0), Random(3), overhead_us=400.0)
    f = run.figures()
    little = clients / (f.mean_ms / 1e3)
    assert abs(f.throughput_rps / little - 1) < 0.02, \
        f"{clients} clients: throughput {f.throughput_rps:.1f}/s, N / mean latency {f.mean_ms:.3f} ms = {little:.1f}/s"
