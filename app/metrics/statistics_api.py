"""Triton's statistics API: batch-size distribution and totals, with reset-robust differences."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import quote

_TOTALS = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")


@dataclass(frozen=True)
class ModelStats:
    """One model's statistics, summed over versions: executions per batch size and request totals."""

    batches: dict[int, int] = field(default_factory=dict)
    inference_count: int = 0
    execution_count: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    ns: dict[str, int] = field(default_factory=dict)
    batch_ns: dict[int, int] = field(default_factory=dict)  # compute_infer per batch size
    batch_io_ns: dict[int, int] = field(default_factory=dict)  # compute_input + compute_output per batch size


def stats_url(http_url: str, model: str | None = None) -> str:
    """Return the statistics URL of one model, or of every loaded model."""
    base = http_url.rstrip("/")
    return f"{base}/v2/models/{quote(model, safe='')}/stats" if model else f"{base}/v2/models/stats"


def parse_stats(text: str) -> dict[str, ModelStats]:
    """Parse a /v2/models[/NAME]/stats JSON body into ModelStats per model name."""
    acc: dict[str, dict] = {}
    for entry in json.loads(text).get("model_stats", []):
        m = acc.setdefault(entry["name"], {"batches": {}, "inference_count": 0, "execution_count": 0,
                                           "counts": {}, "ns": {}, "batch_ns": {},
                                           "batch_io_ns": {}})
        m["inference_count"] += int(entry.get("inference_count", 0))
        m["execution_count"] += int(entry.get("execution_count", 0))
        for batch in entry.get("batch_stats", []):
            size = int(batch["batch_size"])
            m["batches"][size] = m["batches"].get(size, 0) + int(batch["compute_infer"]["count"])
            m["batch_ns"][size] = m["batch_ns"].get(size, 0) + int(batch["compute_infer"].get("ns", 0))
            io = sum(int(batch.get(k, {}).get("ns", 0)) for k in ("compute_input", "compute_output"))
            m["batch_io_ns"][size] = m["batch_io_ns"].get(size, 0) + io
        inference = entry.get("inference_stats", {})
        for key in _TOTALS:
            part = inference.get(key, {})
            m["counts"][key] = m["counts"].get(key, 0) + int(part.get("count", 0))
            m["ns"][key] = m["ns"].get(key, 0) + int(part.get("ns", 0))
    return {name: ModelStats(**values) for name, values in acc.items()}


def stats_reset(prev: ModelStats, cur: ModelStats) -> bool:
    """Return True when cur cannot follow prev without a restart (any count went down or vanished)."""
    if cur.execution_count < prev.execution_count or cur.inference_count < prev.inference_count:
        return True
    if any(cur.counts.get(k, 0) < v for k, v in prev.counts.items()):
        return True
    return any(cur.batches.get(size, 0) < n for size, n in prev.batches.items())


def batch_delta(prev: ModelStats | None, cur: ModelStats) -> dict[int, int]:
    """Return executions per batch size between two reads; after a reset, everything since it."""
    if prev is None or stats_reset(prev, cur):
        return {size: n for size, n in cur.batches.items() if n}
    out = {size: n - prev.batches.get(size, 0) for size, n in cur.batches.items()}
    return {size: n for size, n in out.items() if n > 0}


def batch_time_delta(prev: ModelStats | None, cur: ModelStats) -> dict[int, tuple[int, int, int]]:
    """Return (executions, compute-infer ns, compute-input + compute-output ns) per batch size between two reads,
    reset-robust like batch_delta."""
    counts = batch_delta(prev, cur)
    fresh = prev is None or stats_reset(prev, cur)
    base, io_base = ({}, {}) if fresh else (prev.batch_ns, prev.batch_io_ns)
    return {size: (n, cur.batch_ns.get(size, 0) - base.get(size, 0),
                   max(0, cur.batch_io_ns.get(size, 0) - io_base.get(size, 0))) for size, n in counts.items()}


def per_item_us(deltas, min_executions: int = 1) -> dict[int, float]:
    """Return compute-infer µs per inference at each batch size from a sequence of batch_time_delta results.

    Sizes that ran fewer than min_executions times are left out: one slow execution is not a trend.
    """
    total: dict[int, list[int]] = {}
    for delta in deltas:
        for size, (n, ns, *_) in delta.items():
            acc = total.setdefault(size, [0, 0])
            acc[0] += n
            acc[1] += ns
    return {size: ns / 1000 / (n * size) for size, (n, ns) in sorted(total.items())
            if n >= max(1, min_executions) and size}


def merge_hist(hists) -> dict[int, int]:
    """Return the sum of several batch-size histograms, sorted by batch size."""
    total: dict[int, int] = {}
    for hist in hists:
        for size, n in hist.items():
            total[size] = total.get(size, 0) + n
    return dict(sorted(total.items()))
