"""Calibration from two statistics reads: exact recovery of a known cost table, what it lacks, contention."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings
from app.metrics.statistics_api import ModelStats, parse_stats
from app.twin import Calibration, Window, calibrate_from_stats, client_overhead_from, merge
from app.twin.curve import fit_curve

TABLE_US = {1: 4000.0, 2: 4600.0, 4: 5500.0, 8: 7200.0}  # a known cost table (µs per execution)
IO_US = 150.0  # compute_input + compute_output per execution
TESTS = Path(__file__).resolve().parents[2]


def _settings(instances: int = 1, **parameters: str) -> ModelSettings:
    return ModelSettings(max_batch_size=8, instance_groups=(InstanceGroup(instances),),
                         dynamic_batching=DynamicBatching((4, 8), 500), parameters=parameters)


def _read(executions: dict[int, int], table=TABLE_US, slowdown: float = 1.0, base: ModelStats | None = None):
    """Return a statistics read: base plus these executions per size at table × slowdown µs each."""
    base = base or ModelStats(batches={1: 7}, batch_ns={1: 7 * 3_900_000}, inference_count=7, execution_count=7,
                              counts={"success": 7, "compute_input": 7, "compute_output": 7},
                              ns={"success": 7 * 9_000_000, "compute_input": 7 * 100_000,
                                  "compute_output": 7 * 50_000})
    inferences = sum(b * n for b, n in executions.items())
    batches = {b: base.batches.get(b, 0) + executions.get(b, 0) for b in {*base.batches, *executions}}
    batch_ns = {b: base.batch_ns.get(b, 0) + round(executions.get(b, 0) * table.get(b, 0) * slowdown * 1e3)
                for b in batches}
    # Triton adds a batch's input/output time to each of its requests: b × per-execution time per execution.
    io_ns = {k: base.ns.get(k, 0) + round(inferences * IO_US / 2 * 1e3) for k in ("compute_input", "compute_output")}
    return ModelStats(batches=batches, batch_ns=batch_ns, inference_count=base.inference_count + inferences,
                      execution_count=base.execution_count + sum(executions.values()),
                      counts={k: base.counts.get(k, 0) + inferences for k in ("success", *io_ns)},
                      ns={**base.ns, **io_ns, "success": base.ns.get("success", 0) + inferences * 9_000_000})


def test_two_reads_recover_a_known_cost_table_exactly():
    """Counter differences give each size's mean time and the input/output time per execution, exactly."""
    before = _read({})
    after = _read({1: 300, 2: 200, 4: 120, 8: 80}, base=before)
    cal = calibrate_from_stats(before, after, _settings())
    for size, want in TABLE_US.items():
        got = cal.size_cost(size)
        assert got.source == "measured" and got.mean_us == pytest.approx(want, rel=1e-9), \
            f"size {size}: {got}, table says {want} µs"
    assert cal.io_us == pytest.approx(IO_US, rel=1e-9), f"input+output per execution {cal.io_us} µs, want {IO_US}"


def test_a_batch_size_never_seen_is_reported_as_lacking():
    """Sizes 3, 5-7 never ran: they are fitted, said so, and the answer is not 'high'."""
    before = _read({})
    cal = calibrate_from_stats(before, _read({1: 300, 2: 200, 4: 120, 8: 80}, base=before), _settings())
    lacks = cal.lacks(range(1, 9), 1)
    assert any("batch sizes 3, 5-7 never ran" in line for line in lacks), f"lacks: {lacks}"
    assert cal.size_cost(3).source == "interpolated", f"size 3: {cal.size_cost(3)}"
    assert cal.confidence(range(1, 9), 1).startswith("medium"), cal.confidence(range(1, 9), 1)
    assert "batch sizes 3, 5-7 seen too seldom to time" in cal.confidence(range(1, 9), 1)
    assert cal.confidence([1, 2, 4, 8], 1).startswith("high"), cal.confidence([1, 2, 4, 8], 1)
    far = cal.size_cost(32)
    assert far.source == "extrapolated" and far.uncertainty > cal.size_cost(3).uncertainty, f"size 32: {far}"


def test_beyond_the_largest_size_seen_a_request_costs_no_less_than_it_did_there():
    """The table's sizes 1-8 bend (7.2 ms for 8, 0.9 ms a request): a fitted curve would cheapen 16 and 32 further,
    the twin assumes a saturated device instead; below the largest size the curve stands."""
    before = _read({})
    cal = calibrate_from_stats(before, _read({1: 300, 2: 200, 4: 120, 8: 80}, base=before), _settings())
    at_8 = cal.curve.at(8)
    for size in (16, 32):
        got = cal.size_cost(size)
        assert got.source == "extrapolated" and got.mean_us >= at_8 * size / 8 * (1 - 1e-9), \
            f"size {size}: {got.mean_us:.0f} µs, the fit says {cal.curve.at(size):.0f}, 8 cost {at_8:.0f}"
        assert cal.curve.at(size) < at_8 * size / 8, f"the table's curve should bend: {cal.curve}"
    assert cal.size_cost(3).mean_us == pytest.approx(cal.curve.at(3)), f"size 3: {cal.size_cost(3)}"


def test_few_executions_are_flagged_and_lean_on_the_fit():
    before = _read({})
    cal = calibrate_from_stats(before, _read({1: 300, 2: 200, 4: 120, 8: 3}, base=before), _settings())
    assert cal.size_cost(8).source == "few executions", f"size 8 ran 3 times: {cal.size_cost(8)}"
    assert any("batch sizes 8 ran fewer than 20 times" in line for line in cal.lacks([8], 1)), cal.lacks([8], 1)


def test_a_reset_between_reads_takes_everything_since_it():
    """A config reload restarts the statistics API: the after read alone is the window."""
    before = _read({1: 5000, 2: 5000})
    after = _read({1: 100, 2: 50})  # fewer executions than before: a reset
    cal = calibrate_from_stats(before, after, _settings())
    n, mean = cal.alone[2]
    assert n == 50 and mean == pytest.approx(TABLE_US[2], rel=1e-9), f"size 2 after the reset: {n} × {mean} µs"


def test_contention_is_fitted_from_two_instance_counts():
    """Windows at 1 and 4 instances, saturated, executions 0.4 × 4 = 1.6 times longer at 4: share 0.4 is found."""
    executions = {1: 300, 2: 200, 4: 120, 8: 80}
    one = calibrate_from_stats(None, _read(executions), _settings(1))
    four = calibrate_from_stats(None, _read(executions, slowdown=1.6), _settings(4))
    cal = merge([one, four])
    c = cal.contention
    assert c.measured and abs(c.share - 0.4) <= 0.02 and c.low <= 0.4 <= c.high, f"contention {c}"
    assert cal.size_cost(4).mean_us == pytest.approx(TABLE_US[4], rel=0.03), f"size 4 alone: {cal.size_cost(4)}"
    assert not any("never measured" in line or "contention" in line for line in cal.lacks([4], 4)), cal.lacks([4], 4)


def test_a_windows_length_gives_executions_in_flight():
    """At 4 instances but only 3 executions in flight on average (the window's length says so), share 0.5 slows
    each execution 1.5 times, not 2: the fit must use 3."""
    executions = {1: 300, 2: 200, 4: 120, 8: 80}
    after = _read(executions, slowdown=1.5, base=ModelStats())
    infer_s = sum(after.batch_ns.values()) / 1e9
    four = calibrate_from_stats(None, after, _settings(4), window_s=infer_s / 3)
    one = calibrate_from_stats(None, _read(executions, base=ModelStats()), _settings(1), window_s=infer_s)
    cal = merge([one, four])
    assert four.windows[0].busy == pytest.approx(3.0), f"executions in flight {four.windows[0].busy}"
    assert abs(cal.contention.share - 0.5) <= 0.02, f"contention {cal.contention}"


def test_with_one_instance_count_contention_is_an_assumption():
    cal = calibrate_from_stats(None, _read({1: 300, 2: 200}), _settings(1))
    assert not cal.contention.measured and "assumed" in cal.contention.note, cal.contention
    lacks = cal.lacks([1, 2], 4)
    assert any("4 instances never measured" in line for line in lacks), lacks
    assert cal.confidence([1, 2], 4).startswith("low"), cal.confidence([1, 2], 4)


def test_gpu_sim_parameters_give_the_contention_prior():
    """gpu_sim's cost model says how long an execution holds its device: its compute, as a share of the execution's
    time as measured at one instance (the twin holds the device for that share of the measured mean); at more
    instances, where a measured execution holds the wait for the device too, of the cost model's whole execution."""
    params = {"compute_us_batch1": "3000", "compute_batch_exponent": "0.35", "launch_overhead_us": "2500",
              "copy_us_per_kib": "250", "compute_saturation_batch": "16"}
    cal = calibrate_from_stats(None, _read({1: 100}), _settings(1, **params))
    # Batch 1: compute 3,000 µs of the 4,000 measured (TABLE_US; the Python backend's own time around its sleeps).
    assert TABLE_US[1] == 4000 and cal.contention.share == pytest.approx(0.75), cal.contention
    assert "gpu_sim" in cal.contention.note and "as measured" in cal.contention.note, cal.contention.note
    two = calibrate_from_stats(None, _read({1: 100}, slowdown=1.5), _settings(2, **params))
    # Batch 1: compute 3,000 µs of 2,500 + 3,000 + 2 × 250 = 6,000 µs.
    assert two.contention.share == pytest.approx(0.5), two.contention


def test_the_lab_fixture_calibrates():
    """Reads captured from a real server: 300 requests to gpu_sim, batch sizes 1-7."""
    # The captures live with the metrics tests (tests/unit/metrics/fixtures today); found wherever they moved.
    found = {path.name: path for path in TESTS.glob("**/fixtures/s[02]_*.stats.json")}
    assert {"s0_idle.stats.json", "s2_after_300.stats.json"} <= set(found), f"captures not found under {TESTS}"
    before = parse_stats(found["s0_idle.stats.json"].read_text())["gpu_sim"]
    after = parse_stats(found["s2_after_300.stats.json"].read_text())["gpu_sim"]
    cal = calibrate_from_stats(before, after, _settings(1))
    sizes = sorted(cal.alone)
    assert sizes == list(range(1, 8)) and sum(b * n for b, (n, _) in cal.alone.items()) == 300, cal.alone
    assert 3000 < cal.size_cost(1).mean_us < 8000, f"size 1: {cal.size_cost(1)}"


def test_merge_keeps_every_window_and_the_client_overhead():
    a = calibrate_from_stats(None, _read({1: 100}), _settings(1), client_overhead_us=300.0)
    b = calibrate_from_stats(None, _read({2: 100}), _settings(2), client_overhead_us=500.0)
    cal = merge([a, b])
    assert len(cal.windows) == 2 and cal.instance_counts == (1, 2) and cal.client_overhead_us == 400.0, cal


def test_client_overhead_is_client_latency_minus_the_time_the_twin_simulates():
    """What the twin does not simulate — the client, HTTP, Triton's own handling of a request — is overhead: the
    client's latency minus queue and compute per request, not minus the whole server request time."""
    after = ModelStats(counts={"success": 100}, ns={"success": 100 * 9_000_000, "queue": 100 * 2_000_000,
                                                    "compute_input": 100 * 100_000, "compute_infer": 100 * 5_000_000,
                                                    "compute_output": 100 * 400_000})
    assert client_overhead_from(9500.0, None, after) == pytest.approx(2000.0), \
        "queue and compute take 7,500 µs of the client's 9,500 (the server's other 1,500 µs are overhead too)"


def test_a_window_without_executions_is_refused():
    with pytest.raises(ValueError, match="no execution"):
        Calibration((Window(1, ()),))


def test_the_curve_recovers_a_plus_c_size_to_the_k():
    truth = lambda b: 2500 + 3000 * b ** 0.35  # noqa: E731 - gpu_sim's launch + compute
    curve = fit_curve({b: (truth(b), 50) for b in (1, 2, 4, 8, 16)})
    assert curve.k == pytest.approx(0.35) and curve.at(32) == pytest.approx(truth(32), rel=1e-6), curve


def test_input_and_output_time_is_per_batch_size_and_fitted_between():
    """Reading and writing tensors grows with the rows: sizes seen keep their own time, others lie on the line."""
    io_us = {1: 60.0, 8: 480.0}  # 60 µs per row
    window = Window(1, ((1, 400, 400 * 4_000_000), (8, 300, 300 * 7_200_000)), 2800, io_ns=0, seconds=4.0,
                    batch_io=tuple((b, round(n * io_us[b] * 1e3)) for b, n in ((1, 400), (8, 300))))
    cal = Calibration((window,))
    assert cal.io_at(1) == pytest.approx(60.0) and cal.io_at(8) == pytest.approx(480.0), (cal.io_at(1), cal.io_at(8))
    assert cal.io_at(4) == pytest.approx(240.0, rel=1e-6), f"size 4 between: {cal.io_at(4)} µs"
    costs = cal.costs(8)
    assert costs.service_us(8) == pytest.approx(7200.0 + 480.0), costs.service_us(8)
    busy = (400 * (4000 + 60) + 300 * (7200 + 480)) / 4e6  # executing, inputs and outputs included
    assert window.utilisation == pytest.approx(busy), window.utilisation


def test_without_batch_statistics_of_io_one_mean_stands_for_every_size():
    before = _read({})
    cal = calibrate_from_stats(before, _read({1: 300, 8: 80}, base=before), _settings())
    assert cal.io_at(1) == cal.io_at(8) == pytest.approx(IO_US), (cal.io_at(1), cal.io_at(8))


def test_gpu_sim_batches_hold_its_device_for_their_own_compute_not_one_share_of_their_time():
    """Each size holds gpu_sim's device for the cost model's compute of that size: three instances batching to 8
    answer what the device allows for batches of 8, where one share of every size's time (the probe's mix) would
    give them 13 % more."""
    from app.twin.predict import saturation  # noqa: PLC0415

    params = {"compute_us_batch1": "3000", "compute_batch_exponent": "0.35", "launch_overhead_us": "2500",
              "copy_us_per_kib": "250", "compute_saturation_batch": "16"}
    # compute 3,000 · b^0.35 µs (1: 3,000; 4: 4,925; 8: 6,212), each execution 4,000 µs more of its own
    table = {1: 7000.0, 4: 8925.0, 8: 10212.0}
    cal = calibrate_from_stats(None, _read({1: 100, 4: 100, 8: 100}, table=table), _settings(1, **params))
    three = ModelSettings(max_batch_size=8, instance_groups=(InstanceGroup(3),),
                          dynamic_batching=DynamicBatching((8,), 0), parameters=params)
    device_bound = 8 / 6212e-6  # 1,288 req/s: the device busy with batches of 8 all the time
    per_size = saturation(cal, three).value
    one_share = saturation(replace(cal, cost_model=()), three).value
    assert per_size == pytest.approx(device_bound, rel=0.03), (per_size, device_bound)
    assert one_share > 1.08 * device_bound, (one_share, device_bound)  # the same twin without the cost model's sizes
    # alone (batches of one, the fast path of open loops): 3,000 µs of the device each
    single = ModelSettings(max_batch_size=0, instance_groups=(InstanceGroup(3),), parameters=params)
    assert saturation(cal, single).value == pytest.approx(1 / 3000e-6, rel=0.03), saturation(cal, single)
