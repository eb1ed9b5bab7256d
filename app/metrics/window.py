"""Server figures for any window: sums of counter differences, never averages of per-interval ratios."""
from __future__ import annotations

from dataclasses import dataclass, field

SUCCESS, INFER, EXEC = "nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count"
DURATIONS = {
    "queue_us": "nv_inference_queue_duration_us",
    "compute_input_us": "nv_inference_compute_input_duration_us",
    "compute_infer_us": "nv_inference_compute_infer_duration_us",
    "compute_output_us": "nv_inference_compute_output_duration_us",
    "request_us": "nv_inference_request_duration_us",
}
COMPUTE = ("compute_input_us", "compute_infer_us", "compute_output_us")


@dataclass(frozen=True)
class CounterDelta:
    """How much every counter of one model grew over `seconds` (reset-robust, see deltas.counter_deltas)."""

    seconds: float = 0.0
    counters: dict[str, float] = field(default_factory=dict)
    failures: dict[str, float] = field(default_factory=dict)

    def __add__(self, other: CounterDelta) -> CounterDelta:
        return CounterDelta(self.seconds + other.seconds, _plus(self.counters, other.counters),
                            _plus(self.failures, other.failures))


def _plus(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0.0) + v
    return out


def server_figures(delta: CounterDelta) -> dict:
    """Return the catalog's server figures for one span: rates over its seconds, averages per successful request."""
    c, dt = delta.counters, delta.seconds
    success, infer, execs = c.get(SUCCESS, 0.0), c.get(INFER, 0.0), c.get(EXEC, 0.0)
    fails = sum(delta.failures.values())
    rate = (lambda n: n / dt) if dt > 0 else (lambda n: None)
    out = {
        "infer_count": infer, "request_count": success, "exec_count": execs, "fail_count": fails,
        "infer_rps": rate(infer), "request_rps": rate(success), "exec_rps": rate(execs), "fail_rps": rate(fails),
        "fail_by_reason": {k: rate(v) for k, v in delta.failures.items()} if dt > 0 else None,
        "avg_batch": infer / execs if execs else None,
    }
    for key, counter in DURATIONS.items():
        out[key] = c.get(counter, 0.0) / success if success else None
    out["compute_us"] = sum(out[k] for k in COMPUTE) if success else None
    request = c.get(DURATIONS["request_us"], 0.0)
    out["queue_share"] = c.get(DURATIONS["queue_us"], 0.0) / request if request else None
    return out


def scrapes_inside(rows: list[dict], t0: float, t1: float) -> list[dict]:
    """Return the rows whose scrape interval ends inside (t0, t1]."""
    return [r for r in rows if t0 < r["t"] <= t1]


def server_window(rows: list[dict], t0: float, t1: float) -> dict:
    """Return the server figures of [t0, t1) from the counter differences of the intervals that end in it.

    Also: `span` (first interval's start, last interval's end) actually covered, `intervals`,
    `resets` (counter restarts inside), and the pending gauge's mean and last reading.
    """
    inside = scrapes_inside(rows, t0, t1)
    deltas = [r["delta"] for r in inside if r.get("delta") is not None]
    total = sum(deltas, CounterDelta())
    out = server_figures(total)
    measured = [r for r in inside if r.get("delta") is not None]
    out["span"] = (measured[0]["t"] - measured[0]["delta"].seconds, measured[-1]["t"]) if measured else None
    out["intervals"] = len(measured)
    out["resets"] = sum(1 for r in inside if r.get("reset"))
    pending = [r["pending"] for r in inside if r.get("pending") is not None]
    out["pending"] = sum(pending) / len(pending) if pending else None  # a gauge sampled evenly: its time average
    out["pending_last"] = pending[-1] if pending else None
    out["pending_trend"] = slope(inside, "pending")
    return out


def slope(rows: list[dict], key: str) -> float:
    """Return the least-squares slope of a gauge rows[key] over t (per second); 0 with fewer than 3 points."""
    points = [(r["t"], r[key]) for r in rows if r.get(key) is not None]
    if len(points) < 3:
        return 0.0
    mt = sum(p[0] for p in points) / len(points)
    mv = sum(p[1] for p in points) / len(points)
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (v - mv) for t, v in points) / var if var else 0.0
