"""Name the field guide's pattern from a window, with the knob to try: the one rule behind every verdict on screen."""
from __future__ import annotations

from dataclasses import dataclass, field

from app.config.knobs import DEFAULT_DELAY_US, MAX_INSTANCES, SIZES, delay_at_most
from app.metrics.catalog import MIN_SAMPLES

WAITING_SHARE = 0.4  # queue/batching wait at or above this share of server time: the time is waiting-driven
TAIL_RATIO = 2.0  # p99 at or above this multiple of p50: "p50 low, p99 high"
STUCK_BATCH = 1.2  # average batch below this (with batching possible): stuck at 1
DELAY_BOUND = 1.5  # queue wait up to this multiple of max_queue_delay: the wait is the batching delay itself
FAILING_SHARE = 0.01  # failed attempts at or above this share of those that ended: named before any latency finding
# (a client p99 describes answered requests only: once 1 % fail, the 99th-percentile request never got an answer and
# no latency figure describes it; a healthy lab run fails none, so 1 % is never noise)
ADVICE = {  # what to try per error kind, by prefix of the kind (loadgen.outcome)
    "http_4": "The server refuses the requests: they do not fit the model as it now serves (shape, datatype, batch "
              "size, inputs) — fix the traffic, or undo the config change that caused it.",
    "http_5": "The server fails while serving: read its words, then the server log.",
    "queue_": "Requests are shed by the queue policy: intended load shedding, or raise max_queue_size or the timeout, "
              "or add capacity.",
    "client_timeout": "Answers come later than the client's timeout: lower the load, add capacity, or raise the "
                      "timeout.",
    "conn": "The server cannot be reached or drops connections: check that it is up.",
    "wrong_output": "The answers are wrong: check the model's state handling (sequence batching) and its inputs.",
}


@dataclass(frozen=True)
class Symptoms:
    """What one window looked like, client and server side (None = not measured)."""

    p50_ms: float | None = None
    p99_ms: float | None = None
    latency_n: int = MIN_SAMPLES  # latencies behind the client percentiles
    queue_us: float | None = None
    compute_us: float | None = None
    request_us: float | None = None
    avg_batch: float | None = None
    infer_rps: float | None = None
    offered_rps: float | None = None
    pending_trend: float = 0.0  # growth of the pending-request gauge, requests per second
    pending: float | None = None  # time average of the pending-request gauge
    rejected: int = 0
    requests: int = 0
    attempts: int = 0
    failed: int = 0  # failed attempts that ended in the window
    ended: int = 0  # attempts that ended (answered or failed)
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    error_text: str = ""  # the latest failure's own words (the server's error text)
    server_failed: float | None = None  # nv_inference_request_failure's growth over the window
    per_item_us_by_batch: dict[int, float] = field(default_factory=dict)
    max_batch_size: int = 0
    dynamic_batching: bool = False
    max_queue_delay_us: int = 0
    preferred_sizes: tuple[int, ...] = ()
    instances: int = 1
    seconds: float = 0.0

    @property
    def waiting_share(self) -> float | None:
        """Return the share of server time spent in the queue (batching delay included)."""
        if self.queue_us is None or not self.request_us:
            return None
        return self.queue_us / self.request_us

    @property
    def failed_share(self) -> float | None:
        """Return failed attempts as a share of those that ended (None when none ended)."""
        return self.failed / self.ended if self.ended else None

    @property
    def tail_trusted(self) -> bool:
        """Return True when the client p99 rests on enough samples to judge a tail."""
        return self.latency_n >= MIN_SAMPLES


@dataclass(frozen=True)
class Finding:
    """One named pattern, its evidence, what to try, and (when it is a config change) the knobs."""

    pattern: str
    title: str
    evidence: str
    suggestion: str
    knobs: dict = field(default_factory=dict)


def waiting_driven(share: float) -> bool:
    """THE rule of where a request's server time goes: waiting-driven (queue + batching delay) from WAITING_SHARE of
    it, else compute-driven — pattern A, the diagnosis panel's sentence and /demo's all judge by it."""
    return share >= WAITING_SHARE


def where_time_goes(w: Symptoms) -> str | None:
    """Return one sentence on whether server time is waiting or compute, by the same threshold pattern A uses."""
    share = w.waiting_share
    if share is None:
        return None
    kind = "waiting (queue + batching delay)" if waiting_driven(share) else "compute"
    return (f"server time per request is {share:.0%} waiting: it is driven by **{kind}** "
            f"(waiting-driven from {WAITING_SHARE:.0%})")


def diagnose(w: Symptoms) -> list[Finding]:
    """Return the findings that the window supports, most actionable first."""
    checks = (_failing, _batch_stuck, _pattern_a, _pattern_b, _pattern_c, _rejections, _retries)
    return [f for f in (check(w) for check in checks) if f is not None]


def percent(share: float) -> str:
    """Return a share as a percentage: one decimal below 10 % and near 100 % (never '100 %' unless all of them)."""
    value = share * 100 if share >= 1 else min(share * 100, 99.9)
    return f"{value:.0f} %" if 10 <= value < 99.5 or value >= 100 else f"{value:.1f} %"


def _failing(w: Symptoms) -> Finding | None:
    share = w.failed_share
    if share is None or share < FAILING_SHARE:
        return None
    kinds = sorted((w.errors_by_kind or {}).items(), key=lambda kv: -kv[1])
    kinds = [(k, n) for k, n in kinds if k != "cancelled"]
    top = kinds[0][0] if kinds else ""
    by_kind = ", ".join(f"{k} {n:,}" for k, n in kinds)
    server = ""
    if w.server_failed is not None:
        server = f"; the server counted {w.server_failed:,.0f} failed (nv_inference_request_failure)"
        if not w.server_failed and top.startswith("http_4"):
            server += " — Triton does not count requests it refuses before they reach the model"
    advice = next((text for prefix, text in ADVICE.items() if top.startswith(prefix)),
                  "Read the failures' own words above: they name the cause.")
    return Finding("failing", f"{percent(share)} of requests failing: {w.error_text or top or 'no words given'}",
                   f"{w.failed:,} of {w.ended:,} attempts that ended failed ({by_kind or 'no kind recorded'}){server}; "
                   "latency figures describe only the answered ones", advice)


def _batch_stuck(w: Symptoms) -> Finding | None:
    if w.max_batch_size <= 1 or w.avg_batch is None or w.avg_batch >= STUCK_BATCH or not w.infer_rps:
        return None
    if not w.dynamic_batching:
        knobs = {"dynamic_batching": True, "max_queue_delay_microseconds": DEFAULT_DELAY_US}
        fix = "enable dynamic batching"
    elif w.max_queue_delay_us == 0:
        knobs, fix = ({"max_queue_delay_microseconds": DEFAULT_DELAY_US},
                      f"give the scheduler a small delay ({DEFAULT_DELAY_US} µs)")
    else:
        knobs, fix = {}, "offer more load (concurrency) — batches form only when requests wait together"
    return Finding("stuck", "Batch size stuck at 1", f"average batch {w.avg_batch:.2f} at {w.infer_rps:,.0f} infer/s",
                   f"Load too low or no delay: {fix}.", knobs)


def _pattern_a(w: Symptoms) -> Finding | None:
    share = w.waiting_share
    if share is None or not (w.p50_ms and w.p99_ms) or not w.tail_trusted or share < WAITING_SHARE:
        return None
    delay_bound = (w.dynamic_batching and w.max_queue_delay_us >= 1000
                   and 0.25 * w.max_queue_delay_us <= w.queue_us <= DELAY_BOUND * w.max_queue_delay_us)
    if not (w.p99_ms >= TAIL_RATIO * w.p50_ms or delay_bound):
        return None
    knobs, suggestion = {}, "Cut waiting before adding instances: lower max_queue_delay, fewer or smaller preferred sizes."
    if w.dynamic_batching and w.queue_us <= DELAY_BOUND * w.max_queue_delay_us:
        shorter = max(delay_at_most(w.max_queue_delay_us / 4), min(100, w.max_queue_delay_us))
        if 0 < shorter < w.max_queue_delay_us:
            knobs = {"max_queue_delay_microseconds": shorter}
    elif w.dynamic_batching:
        suggestion = (f"The wait ({w.queue_us / 1000:.1f} ms) is far longer than max_queue_delay "
                      f"({w.max_queue_delay_us} µs): it is queueing, not the batching delay — a shorter delay will not "
                      "help; check whether arrivals outrun service (pattern B) or add capacity.")
    return Finding("A", "Pattern A — p50 low, p99 high: the tail is waiting",
                   f"p99 {w.p99_ms:.1f} ms vs p50 {w.p50_ms:.1f} ms ({w.latency_n:,} requests); "
                   f"{share:.0%} of server time is queue/batching wait"
                   + (f" (max_queue_delay {w.max_queue_delay_us} µs)" if w.dynamic_batching else ""),
                   suggestion, knobs)


def _pattern_b(w: Symptoms) -> Finding | None:
    if w.queue_us is None or not w.compute_us:
        return None
    queued = w.queue_us >= 2 * w.compute_us and w.queue_us > 2 * w.max_queue_delay_us
    backlog = (w.pending or 0) >= 2 * w.instances or w.pending_trend > 1.0
    draining = w.offered_rps is not None and w.infer_rps is not None and w.offered_rps < 0.95 * w.infer_rps
    if not (queued and backlog) or draining:
        return None
    knobs = {"instance_count": w.instances + 1} if w.instances < min(4, MAX_INSTANCES) else {}
    if not w.dynamic_batching and w.max_batch_size > 1:
        knobs = {"dynamic_batching": True, "max_queue_delay_microseconds": DEFAULT_DELAY_US}
    offered = f"offered {w.offered_rps:,.0f}/s vs served {w.infer_rps:,.0f}/s; " if w.offered_rps and w.infer_rps else ""
    return Finding("B", "Pattern B — arrivals outrun service, the queue builds",
                   f"{offered}queue wait {w.queue_us / 1000:.1f} ms vs compute {w.compute_us / 1000:.1f} ms per request; "
                   f"{w.pending or 0:.0f} requests pending on average",
                   "Raise the service rate: check batches really grow, add an instance, or look for a CPU bottleneck.", knobs)


def _pattern_c(w: Symptoms) -> Finding | None:
    sizes = sorted(b for b, v in w.per_item_us_by_batch.items() if v)
    if len(sizes) < 2:
        return None
    best = min(sizes, key=lambda b: w.per_item_us_by_batch[b])
    largest = sizes[-1]
    if largest == best or w.per_item_us_by_batch[largest] < 1.1 * w.per_item_us_by_batch[best]:
        return None
    cap = max((s for s in SIZES if s <= best), default=1)  # a size the preferred-size knob offers
    return Finding("C", "Pattern C — bigger batches are slower per item",
                   f"{w.per_item_us_by_batch[largest]:.0f} µs/item at batch {largest} vs "
                   f"{w.per_item_us_by_batch[best]:.0f} µs/item at batch {best}",
                   f"Cap the batch near {best}: preferred_batch_size and max_batch_size.",
                   {"preferred_batch_size": (cap,)})


def _rejections(w: Symptoms) -> Finding | None:
    if not w.rejected or not w.requests:
        return None
    return Finding("rejections", "Requests are being rejected",
                   f"{w.rejected:,} of {w.requests:,} requests ({w.rejected / w.requests:.1%}) rejected by the queue policy",
                   "Intended load shedding keeps the priority class inside its SLA; if not intended, raise "
                   "max_queue_size or the timeout, or add capacity.")


def _retries(w: Symptoms) -> Finding | None:
    if not w.requests or w.attempts <= 1.2 * w.requests:
        return None
    return Finding("retries", "Retry amplification",
                   f"{w.attempts:,} attempts for {w.requests:,} requests ({w.attempts / w.requests:.2f}×)",
                   "Client timeouts plus retries feed the queue: timeouts 2–3× p99, exponential backoff with "
                   "jitter, a retry cap.")
