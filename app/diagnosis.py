"""Name the field guide's pattern from the current window, with the knob to try."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Window:
    """What the last seconds looked like, client and server side (None = not measured)."""

    p50_ms: float | None = None
    p99_ms: float | None = None
    queue_us: float | None = None
    compute_us: float | None = None
    request_us: float | None = None
    avg_batch: float | None = None
    infer_rps: float | None = None
    offered_rps: float | None = None
    pending_trend: float = 0.0  # growth of the pending-request gauge, requests per second
    pending: float | None = None  # mean of the pending-request gauge
    rejected: int = 0
    requests: int = 0
    attempts: int = 0
    per_item_us_by_batch: dict[int, float] = field(default_factory=dict)
    max_batch_size: int = 0
    dynamic_batching: bool = False
    max_queue_delay_us: int = 0
    preferred_sizes: tuple[int, ...] = ()
    instances: int = 1


@dataclass(frozen=True)
class Finding:
    """One named pattern, its evidence, what to try, and (when it is a config change) the knobs."""

    pattern: str
    title: str
    evidence: str
    suggestion: str
    knobs: dict = field(default_factory=dict)


def diagnose(w: Window) -> list[Finding]:
    """Return the findings that the window supports, most actionable first."""
    checks = (_batch_stuck, _pattern_a, _pattern_b, _pattern_c, _rejections, _retries)
    return [f for f in (check(w) for check in checks) if f is not None]


def _batch_stuck(w: Window) -> Finding | None:
    if w.max_batch_size <= 1 or w.avg_batch is None or w.avg_batch >= 1.2 or not w.infer_rps:
        return None
    if not w.dynamic_batching:
        knobs, fix = {"dynamic_batching": True, "max_queue_delay_microseconds": 500}, "enable dynamic batching"
    elif w.max_queue_delay_us == 0:
        knobs, fix = {"max_queue_delay_microseconds": 500}, "give the scheduler a small delay (500 µs)"
    else:
        knobs, fix = {}, "offer more load (concurrency) — batches form only when requests wait together"
    return Finding("stuck", "Batch size stuck at 1", f"average batch {w.avg_batch:.2f} at {w.infer_rps:.0f} infer/s",
                   f"Load too low or no delay: {fix}.", knobs)


def _pattern_a(w: Window) -> Finding | None:
    if not (w.p50_ms and w.p99_ms and w.request_us and w.queue_us is not None):
        return None
    waiting = w.queue_us / w.request_us
    delay_bound = w.dynamic_batching and w.max_queue_delay_us >= 1000 and w.queue_us >= 0.25 * w.max_queue_delay_us
    if waiting < 0.4 or not (w.p99_ms >= 2 * w.p50_ms or delay_bound):
        return None
    knobs = {}
    if w.dynamic_batching and w.max_queue_delay_us > 100:
        knobs = {"max_queue_delay_microseconds": max(100, w.max_queue_delay_us // 4)}
    return Finding("A", "Pattern A — p50 low, p99 high: the tail is waiting",
                   f"p99 {w.p99_ms:.1f} ms vs p50 {w.p50_ms:.1f} ms; {waiting:.0%} of server time is queue/batching wait"
                   + (f" (max_queue_delay {w.max_queue_delay_us} µs)" if w.dynamic_batching else ""),
                   "Cut waiting before adding instances: lower max_queue_delay, fewer or smaller preferred sizes.", knobs)


def _pattern_b(w: Window) -> Finding | None:
    if w.queue_us is None or not w.compute_us:
        return None
    queued = w.queue_us >= 2 * w.compute_us and w.queue_us > 2 * w.max_queue_delay_us
    backlog = (w.pending or 0) >= 2 * w.instances or w.pending_trend > 1.0
    if not (queued and backlog):
        return None
    knobs = {"instance_count": w.instances + 1} if w.instances < 4 else {}
    if not w.dynamic_batching and w.max_batch_size > 1:
        knobs = {"dynamic_batching": True, "max_queue_delay_microseconds": 500}
    offered = f"offered {w.offered_rps:.0f}/s vs served {w.infer_rps:.0f}/s; " if w.offered_rps and w.infer_rps else ""
    return Finding("B", "Pattern B — arrivals outrun service, the queue builds",
                   f"{offered}queue wait {w.queue_us / 1000:.1f} ms vs compute {w.compute_us / 1000:.1f} ms per request; "
                   f"{w.pending or 0:.0f} requests pending",
                   "Raise the service rate: check batches really grow, add an instance, or look for a CPU bottleneck.", knobs)


def _pattern_c(w: Window) -> Finding | None:
    sizes = sorted(b for b, v in w.per_item_us_by_batch.items() if v)
    if len(sizes) < 2:
        return None
    best = min(sizes, key=lambda b: w.per_item_us_by_batch[b])
    largest = sizes[-1]
    if largest == best or w.per_item_us_by_batch[largest] < 1.1 * w.per_item_us_by_batch[best]:
        return None
    return Finding("C", "Pattern C — bigger batches are slower per item",
                   f"{w.per_item_us_by_batch[largest]:.0f} µs/item at batch {largest} vs "
                   f"{w.per_item_us_by_batch[best]:.0f} µs/item at batch {best}",
                   f"Cap the batch near {best}: preferred_batch_size and max_batch_size.",
                   {"preferred_batch_size": (best,)})


def _rejections(w: Window) -> Finding | None:
    if not w.rejected or not w.requests:
        return None
    return Finding("rejections", "Requests are being rejected",
                   f"{w.rejected} of {w.requests} requests ({w.rejected / w.requests:.1%}) rejected by the queue policy",
                   "Intended load shedding keeps the priority class inside its SLA; if not intended, raise "
                   "max_queue_size or the timeout, or add capacity.")


def _retries(w: Window) -> Finding | None:
    if not w.requests or w.attempts <= 1.2 * w.requests:
        return None
    return Finding("retries", "Retry amplification",
                   f"{w.attempts} attempts for {w.requests} requests ({w.attempts / w.requests:.2f}×)",
                   "Client timeouts plus retries feed the queue: timeouts 2–3× p99, exponential backoff with "
                   "jitter, a retry cap.")
