"""Build a Calibration from what the server already reports: two reads of its statistics API, and its config."""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace

from app.config.settings import ModelSettings
from app.metrics.statistics_api import ModelStats, batch_time_delta, stats_reset
from app.twin.batcher import instance_count
from app.twin.calibration import Calibration, Window
from app.twin.gpu_sim_prior import GPU_SIM_ITEM_BYTES, GPU_SIM_KEY, cost_parameters, gpu_sim_cost_model
from app.twin.load import Load

REPRODUCED_S = 4.0  # simulated seconds of a window's own traffic, to see whether the twin reproduces it


def gpu_sim_share(parameters: Mapping[str, str], executions: Mapping[int, int],
                  measured_ns: Mapping[int, int] | None = None) -> tuple[float | None, str]:
    """Return the device share gpu_sim's cost model implies for these executions per size, or None elsewhere: its
    device time over the executions' time as measured (measured_ns per size, Triton's compute_infer), else over the
    cost model's own whole execution.

    The twin holds the device for the share times the measured mean, so the share is of the measured time: over
    the cost model's time (launch, copies and compute, without the Python backend's own handling around them) it
    was 0.50 for batches of one where the compute is 0.47 of the 6,432 µs Triton measured (batches of four: 0.52
    and 0.48 of 10,244 µs), and two and three instances answered 8-13 % more than the twin expected (runs AC and
    AD, 2026-12-07)."""
    if GPU_SIM_KEY not in parameters or not executions:
        return None, ""
    cost = gpu_sim_cost_model().from_parameters(dict(parameters))
    device = sum(n * cost.compute_us(b) for b, n in executions.items())
    measured = sum((measured_ns or {}).get(b, 0) for b in executions) / 1e3
    if measured > device:
        share = round(device / measured, 2)
        return share, (f"from gpu_sim's cost model in the config's parameters: its compute is {share:.0%} of an "
                       "execution's time as measured (the shared device's part)")
    alone = sum(n * (cost.launch_overhead_us + cost.compute_us(b) + 2 * cost.copy_us(b * GPU_SIM_ITEM_BYTES))
                for b, n in executions.items())
    share = round(device / alone, 2)
    return share, (f"from gpu_sim's cost model in the config's parameters: {share:.0%} of an execution holds the "
                   f"shared device (inputs taken as {GPU_SIM_ITEM_BYTES} bytes per item)")


def window_of(before: ModelStats | None, after: ModelStats, instances: int,
              window_s: float | None = None, client_rps: float | None = None,
              outside_us: float | None = None, **clients) -> Window:
    """Return the executions between two reads as counter differences (after a reset: everything since it)."""
    deltas = batch_time_delta(before, after)
    base = ModelStats() if before is None or stats_reset(before, after) else before
    io_ns = sum(after.ns.get(k, 0) - base.ns.get(k, 0) for k in ("compute_input", "compute_output"))
    queued = after.counts.get("queue", 0) - base.counts.get("queue", 0)
    queue_us = (after.ns.get("queue", 0) - base.ns.get("queue", 0)) / queued / 1e3 if queued > 0 else None
    return Window(instances, tuple((size, n, ns) for size, (n, ns, _) in sorted(deltas.items())),
                  sum(size * n for size, (n, *_) in deltas.items()), max(0, io_ns), window_s, client_rps, outside_us,
                  queue_us, tuple((size, io) for size, (_, _, io) in sorted(deltas.items()) if io), **clients)


def calibrate_from_stats(before: ModelStats | None, after: ModelStats, settings: ModelSettings,
                         client_overhead_us: float | None = None, *, window_s: float | None = None,
                         cv: float | None = None, client_rps: float | None = None, **clients) -> Calibration:
    """Return a calibration from two statistics reads of one model served with these settings (client_rps: the
    answers per second the clients saw over the window, which with the overhead shows a limit outside the model;
    clients: the window's client_p99_us, server_us and open_loop, which give the spread of the clients' own time)."""
    window = window_of(before, after, instance_count(settings), window_s, client_rps, client_overhead_us, **clients)
    # one instance's times: with more, a measured execution holds the wait for the device too
    measured = {size: ns for size, _, ns in window.batches} if window.instances == 1 else None
    prior, note = gpu_sim_share(dict(settings.parameters), {size: n for size, n, _ in window.batches}, measured)
    return Calibration((window,), client_overhead_us, prior, note, cv,
                       cost_model=cost_parameters(dict(settings.parameters)))


def merge(calibrations: Iterable[Calibration]) -> Calibration:
    """Return one calibration holding every window of several (windows, instance counts, or both)."""
    cals = list(calibrations)
    if not cals:
        raise ValueError("nothing to merge: give at least one calibration")
    overheads = [c.client_overhead_us for c in cals if c.client_overhead_us is not None]
    prior = next((c for c in cals if c.prior_share is not None), None)
    return Calibration(tuple(w for c in cals for w in c.windows),
                       sum(overheads) / len(overheads) if overheads else None,
                       prior.prior_share if prior else None, prior.prior_note if prior else "",
                       next((c.cv for c in cals if c.cv is not None), None), cals[0].min_executions,
                       next((c.cost_model for c in cals if c.cost_model), ()))


SIMULATED = ("queue", "compute_input", "compute_infer", "compute_output")  # the request's time the twin simulates


def client_overhead_from(client_mean_us: float, before: ModelStats | None, after: ModelStats) -> float:
    """Return a request's time outside what the twin simulates: the client's mean latency minus the server's queue
    and compute time per request (what is left is the client, HTTP and the server's own handling of the request)."""
    base = ModelStats() if before is None or stats_reset(before, after) else before
    count = after.counts.get("success", 0) - base.counts.get("success", 0)
    if count <= 0:
        raise ValueError("no successful request between the two reads: the server time is unknown")
    simulated_us = sum(after.ns.get(k, 0) - base.ns.get(k, 0) for k in SIMULATED) / count / 1e3
    return max(0.0, client_mean_us - simulated_us)


def reproduced(known: Calibration | None, new: Calibration, settings: ModelSettings, load: Load) -> Calibration:
    """Return new (one window) with what the twin, calibrated on everything known and on the window, expects of the
    window's own traffic (load, with the window's own client overhead): where the clients got clearly fewer
    answers, the window is evidence of a limit outside the model's execution (Calibration.host_ceiling)."""
    from app.twin.predict import predict  # noqa: PLC0415 - the twin's own run, above the calibration it checks

    window = new.windows[-1]
    if not window.client_rps:
        return new
    everything = merge([known, new]) if known is not None else new
    # What the executions allow, uncapped: a ceiling an earlier window set would cap the expectation at its own rate,
    # and a faster window would then never look short (text_len: a single client's window 17 % short of what the
    # twin expected capped every later window at its 1,721 answers/s)
    everything = replace(everything, windows=tuple(replace(w, expected_rps=None) for w in everything.windows))
    if window.outside_us is not None:
        everything = replace(everything, client_overhead_us=window.outside_us)
    seen = predict(everything, settings, replace(load, duration_s=REPRODUCED_S,
                                                 warmup_s=min(load.warmup_s, REPRODUCED_S / 4)), replications=1)
    # The server's own spread for this traffic: the twin's p99 less its mean (each with the window's constant
    # outside time, which cancels), so the clients' spread is not taken to hold it too (Window.outside_p99_us).
    p99_us, mean_us = seen.p99_ms.value * 1e3, (seen.queue_ms.value + seen.compute_ms.value) * 1e3
    spread = None if math.isnan(p99_us) else p99_us - (window.outside_us or 0.0) - mean_us
    return replace(new, windows=(*new.windows[:-1], replace(window, expected_rps=seen.throughput_rps.value,
                                                           server_spread_us=spread)))
