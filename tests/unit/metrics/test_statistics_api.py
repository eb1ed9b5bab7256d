"""Batch-size distribution from the statistics API, across the resets a reload causes."""
from __future__ import annotations

from app.metrics.statistics_api import batch_delta, merge_hist, parse_stats, stats_url
from tests.unit.metrics.captures import stats, stats_text


def _inferences(hist: dict[int, int]) -> int:
    return sum(size * n for size, n in hist.items())


def test_parse_sums_batches_per_model():
    s = stats("s2_after_300")
    assert sum(s.batches.values()) == s.execution_count == 108
    assert _inferences(s.batches) == s.inference_count == 300
    assert s.counts["success"] == 300 and s.ns["queue"] > 0
    assert set(parse_stats(stats_text("s2_after_300"))) == {"gpu_sim", "mlp", "stream_acc"}
    assert stats("s0_idle").batches == {}


def test_batch_delta_between_two_reads():
    delta = batch_delta(stats("s1_after_200"), stats("s2_after_300"))
    assert sum(delta.values()) == 108 - 69
    assert _inferences(delta) == 100
    assert all(n > 0 for n in delta.values())


def test_config_reload_restarts_stats_so_delta_is_everything_since():
    after = stats("s3_after_config_reload")
    assert after.execution_count < stats("s2_after_300").execution_count
    delta = batch_delta(stats("s2_after_300"), after)
    assert delta == after.batches
    assert sum(delta.values()) == after.execution_count and _inferences(delta) == 62


def test_unload_load_reset():
    delta = batch_delta(stats("s3_after_config_reload"), stats("s4_after_unload_load"))
    assert delta == stats("s4_after_unload_load").batches and _inferences(delta) == 40


def test_stats_url_and_merge():
    assert stats_url("http://h:1/", "a b") == "http://h:1/v2/models/a%20b/stats"
    assert stats_url("http://h:1") == "http://h:1/v2/models/stats"
    assert merge_hist([{2: 1, 1: 3}, {}, {2: 4, 8: 1}]) == {1: 3, 2: 5, 8: 1}
    assert batch_delta(None, stats("s1_after_200")) == stats("s1_after_200").batches


def test_per_item_compute_time_per_batch_size_from_deltas():
    from app.metrics.statistics_api import ModelStats, batch_time_delta, per_item_us

    a = ModelStats(batches={1: 10, 4: 5}, batch_ns={1: 10_000_000, 4: 20_000_000}, batch_io_ns={4: 1_000_000})
    b = ModelStats(batches={1: 20, 4: 15}, batch_ns={1: 20_000_000, 4: 60_000_000}, batch_io_ns={4: 3_000_000})
    delta = batch_time_delta(a, b)
    assert delta == {1: (10, 10_000_000, 0), 4: (10, 40_000_000, 2_000_000)}
    assert per_item_us([delta]) == {1: 1000.0, 4: 1000.0}
    assert per_item_us([delta, {8: (2, 16_000_000)}], min_executions=10) == {1: 1000.0, 4: 1000.0}  # 2 runs: noise
    reset = ModelStats(batches={1: 2}, batch_ns={1: 3_000_000})
    assert batch_time_delta(b, reset) == {1: (2, 3_000_000, 0)}


def test_input_and_output_time_per_batch_size_is_read():
    """A batch's compute_input and compute_output are the backend's reading and writing of its tensors: the twin
    counts them per size (they grow with the rows)."""
    s = stats("s2_after_300")
    assert set(s.batch_io_ns) == set(s.batches), (s.batch_io_ns, s.batches)
    assert all(ns > 0 for ns in s.batch_io_ns.values()), s.batch_io_ns
