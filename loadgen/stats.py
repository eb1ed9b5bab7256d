"""Statistics from the record stream: per-second, per-class counts, percentiles, failures in their own words, and
run totals."""
from __future__ import annotations

import base64
import math
import threading
from collections import Counter, defaultdict
from collections.abc import Callable

from loadgen.histogram import QUANTILES, Histogram, Samples
from loadgen.outcome import FAILED, Outcome
from loadgen.records import Record
from loadgen.response_stats import Responses
from loadgen.behind import BEHIND_S
from loadgen.spec import ALL, LoadSpec

# (measured beside 1-3 stress-ng workers on 2 cores at 150 and 450 req/s: sends 1-12 % over 1 ms late, none
# over 5 ms but 0.6 %, at most 0.3 % over 10 ms; a generator that cannot keep up sends every request later)
Held = Callable[[str, float, float], bool]  # (model, sent epoch s, done epoch s) -> was it in flight during a reload


class Bucket:
    """Counts and successful latencies of one class over one second (or the whole run)."""

    __slots__ = ("outcomes", "errors", "texts", "sent", "requests", "late", "behind", "good", "retries", "held",
                 "latencies", "held_latencies", "lateness", "responses", "_samples")

    def __init__(self, samples=Samples) -> None:
        self.outcomes: Counter = Counter()
        self.errors: Counter = Counter()
        self.texts: dict[str, list] = {}  # error kind -> [first time, first text, latest time, latest text]
        self.sent = self.requests = self.late = self.behind = self.good = self.retries = self.held = 0
        self._samples = samples
        self.latencies = samples()  # seconds, successful attempts
        self.held_latencies = samples()  # seconds, successful attempts that were in flight during a config reload
        self.lateness = samples()  # seconds, first attempts (whole-run totals only)
        self.responses = Responses(samples)  # streamed answers of decoupled models (loadgen.response_stats)

    def count_sent(self, r: Record) -> None:
        """Count an attempt in the second it went out."""
        self.sent += 1
        self.requests += r.attempt == 1
        self.late += r.late
        self.behind += r.attempt == 1 and r.lateness_s > BEHIND_S

    def count_end(self, r: Record, good: bool, held: bool = False, at: float | None = None) -> None:
        """Count an attempt's outcome in the second it ended; `held`: it was in flight during a config reload;
        `at`: when it ended on the caller's clock (epoch s for WindowedStats; default the run second)."""
        self.outcomes[r.outcome] += 1
        self.good += good
        self.retries += r.attempt > 1
        self.held += held
        if r.error:
            self.errors[r.error] += 1
        if r.detail and r.outcome in FAILED:  # a cancelled attempt may say why, but it is no failure
            self._text(r.error, r.done_s if at is None else at, r.detail)
        if r.outcome is Outcome.OK:
            (self.held_latencies if held else self.latencies).add(r.latency_s)
            if r.first_s is not None:  # a streamed request's responses (plain requests: no call)
                self.responses.add(r, held)

    def _text(self, kind: str, t: float, text: str) -> None:
        seen = self.texts.get(kind)
        if seen is None:
            self.texts[kind] = [t, text, t, text]
            return
        if t < seen[0]:  # records of one batch may end out of order (threads, retries)
            seen[:2] = t, text
        if t >= seen[2]:
            seen[2:] = t, text

    def merge(self, other: Bucket) -> None:
        """Add another bucket's contents to this one (failure texts: the earliest first, the latest latest)."""
        self.outcomes.update(other.outcomes)
        self.errors.update(other.errors)
        for kind, (first_t, first, last_t, last) in other.texts.items():
            seen = self.texts.get(kind)
            if seen is None:
                self.texts[kind] = [first_t, first, last_t, last]
                continue
            if first_t < seen[0]:
                seen[:2] = first_t, first
            if last_t >= seen[2]:
                seen[2:] = last_t, last
        self.sent += other.sent
        self.requests += other.requests
        self.late += other.late
        self.behind += other.behind
        self.good += other.good
        self.retries += other.retries
        self.held += other.held
        self.latencies.merge(other.latencies)
        self.held_latencies.merge(other.held_latencies)
        self.lateness.merge(other.lateness)
        self.responses.merge(other.responses)

    def to_dict(self) -> dict:
        """Return the bucket as JSON-ready values (latencies as base64 float64), for the history store."""
        return {"outcomes": {str(k): v for k, v in self.outcomes.items()}, "errors": dict(self.errors),
                "texts": {k: list(v) for k, v in self.texts.items()}, **{k: getattr(self, k) for k in _COUNTS},
                "latencies": _pack(self.latencies), "held_latencies": _pack(self.held_latencies),
                **self.responses.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> Bucket:
        """Rebuild a per-second bucket from to_dict()'s values."""
        bucket = cls()
        bucket.outcomes.update({Outcome(k): int(v) for k, v in data.get("outcomes", {}).items()})
        bucket.errors.update(data.get("errors", {}))
        bucket.texts = {k: [float(v[0]), str(v[1]), float(v[2]), str(v[3])] for k, v in data.get("texts", {}).items()}
        for k in _COUNTS:
            setattr(bucket, k, int(data.get(k, 0)))
        bucket.latencies.values.frombytes(base64.b64decode(data.get("latencies", "")))
        bucket.held_latencies.values.frombytes(base64.b64decode(data.get("held_latencies", "")))
        bucket.responses.load(data)
        return bucket

    def row(self, seconds: float, include_held: bool = True) -> dict:
        """Return counts, rates over `seconds` and latency percentiles in ms with their sample count.

        include_held=False leaves out the latencies of requests that waited through a config reload.
        """
        o = self.outcomes
        latencies = self.latencies
        if include_held and len(self.held_latencies):
            latencies = self._samples()
            latencies.merge(self.latencies)
            latencies.merge(self.held_latencies)
        failed = sum(o[k] for k in FAILED)
        ended = o[Outcome.OK] + failed  # attempts that got a verdict (cancelled ones did not)
        row = {
            "sent": self.sent, "requests": self.requests, "ok": o[Outcome.OK],
            "failed": failed, "failed_share": failed / ended if ended else None,
            "rejected": o[Outcome.REJECTED], "timeouts": o[Outcome.TIMEOUT],
            "errors": o[Outcome.ERROR], "wrong_output": o[Outcome.WRONG_OUTPUT], "cancelled": o[Outcome.CANCELLED],
            "late": self.late, "behind": self.behind, "retries": self.retries, "held": self.held,
            "errors_by_kind": dict(self.errors),
            "error_texts": {k: {"count": self.errors[k], "first": first, "first_t": first_t, "latest": last,
                                "latest_t": last_t} for k, (first_t, first, last_t, last) in self.texts.items()},
            "throughput_rps": o[Outcome.OK] / seconds if seconds > 0 else 0.0,
            "goodput_rps": self.good / seconds if seconds > 0 else 0.0,
            "offered_rps": self.sent / seconds if seconds > 0 else 0.0,
            "latency_n": len(latencies),
        }
        row.update(percentiles_ms(latencies))
        row["mean_ms"] = latencies.mean_s() * 1000.0 if len(latencies) else None
        row.update(self.responses.row(seconds, include_held))
        return row


_COUNTS = ("sent", "requests", "late", "behind", "good", "retries", "held")


def latest_error(row: dict) -> dict | None:
    """Return the most recent failure text of a row ({kind, count, first, first_t, latest, latest_t}), None if none."""
    texts = row.get("error_texts") or {}
    if not texts:
        return None
    kind = max(texts, key=lambda k: texts[k]["latest_t"])
    return {"kind": kind, **texts[kind]}


def _pack(samples: Samples) -> str:
    return base64.b64encode(samples.values.tobytes()).decode()


def percentiles_ms(samples: Samples | Histogram) -> dict:
    """Return p50/p90/p95/p99 in ms; None when there are no samples."""
    if not len(samples):
        return {f"p{q}_ms": None for q in QUANTILES}
    return {f"p{q}_ms": v * 1000.0 for q, v in zip(QUANTILES, samples.quantiles_s())}


def slas_of(spec: LoadSpec) -> dict[str, float]:
    """Return each class's and sequence group's SLA in seconds."""
    return {c.name: c.sla_ms / 1000.0 for c in spec.classes} | {s.name: s.sla_ms / 1000.0 for s in spec.sequences}


def is_good(r: Record, slas_s: dict[str, float]) -> bool:
    """Return True for goodput: answered right, within its class's SLA counted from its slot (lateness included)."""
    return r.outcome is Outcome.OK and r.latency_s + r.lateness_s <= slas_s.get(r.cls, math.inf)


def stats_for(spec: LoadSpec, held: Held | None = None) -> WindowedStats:
    """Return statistics that know the spec's SLAs and warm-up (and, optionally, when reloads held requests)."""
    return WindowedStats(slas_of(spec), spec.warmup_s, held=held)


class WindowedStats:
    """Subscriber that keeps per-second buckets per class and run totals after the warm-up."""

    def __init__(self, slas_s: dict[str, float] | None = None, warmup_s: float = 0.0, t0_epoch: float = 0.0,
                 retention_s: int = 900, held: Held | None = None) -> None:
        self.slas_s = dict(slas_s or {})
        self.held = held
        self.warmup_s, self.t0_epoch, self.retention_s = warmup_s, t0_epoch, retention_s
        self.seconds: dict[int, dict[str, Bucket]] = defaultdict(lambda: defaultdict(Bucket))
        self.totals: dict[str, Bucket] = defaultdict(lambda: Bucket(Histogram))
        self.end_s = 0.0
        self.lock = threading.Lock()

    def reset(self, at_s: float) -> None:
        """Forget everything before run second at_s: the window and run totals start again from there."""
        with self.lock:
            self.seconds.clear()
            self.totals.clear()
            self.warmup_s = max(self.warmup_s, at_s)
            self.end_s = max(self.end_s, at_s)

    def set_start(self, t0_epoch: float) -> None:
        """Set the wall-clock time of second 0 of the run."""
        self.t0_epoch = t0_epoch

    def __call__(self, records: list[Record]) -> None:
        """Take a batch of records."""
        with self.lock:
            for r in records:
                self._add(r)
            self._prune()

    def _add(self, r: Record) -> None:
        done = r.sent_s + r.latency_s
        self.end_s = max(self.end_s, done)
        good = is_good(r, self.slas_s)
        held = self.held is not None and self.held(r.model, self.t0_epoch + r.sent_s, self.t0_epoch + done)
        self.seconds[int(r.sent_s)][r.cls].count_sent(r)
        self.seconds[int(done)][r.cls].count_end(r, good, held, self.t0_epoch + done)
        if r.sent_s >= self.warmup_s:
            total = self.totals[r.cls]
            total.count_sent(r)
            total.count_end(r, good, at=self.t0_epoch + done)
            if r.attempt == 1:
                total.lateness.add(r.lateness_s)

    def _prune(self) -> None:
        horizon = int(self.end_s) - self.retention_s
        for second in [s for s in self.seconds if s < horizon]:
            del self.seconds[second]

    def timeline(self, window_s: float = 120.0, now_s: float | None = None) -> list[dict]:
        """Return one row per second per class (and 'all') over the last window_s seconds of complete data."""
        with self.lock:
            last = int(now_s) if now_s is not None else int(self.end_s) + 1
            classes = sorted({c for per in self.seconds.values() for c in per})
            rows = []
            for second in range(max(0, last - int(window_s)), last):
                per = self.seconds.get(second, {})
                merged = Bucket()
                for cls in classes:
                    bucket = per.get(cls) or Bucket()
                    merged.merge(bucket)
                    rows.append({"t": self.t0_epoch + second, "cls": cls, **bucket.row(1.0)})
                if classes:
                    rows.append({"t": self.t0_epoch + second, "cls": ALL, **merged.row(1.0)})
            return rows

    def export_seconds(self, since_s: float = 0.0) -> dict[int, dict[str, dict]]:
        """Return the per-second buckets from run second since_s on, as JSON-ready values."""
        with self.lock:
            return {second: {cls: bucket.to_dict() for cls, bucket in per.items()}
                    for second, per in self.seconds.items() if second >= since_s}

    def restore_seconds(self, seconds: dict, end_s: float) -> None:
        """Take per-second buckets exported earlier (a run of a previous dashboard process)."""
        with self.lock:
            for second, per in seconds.items():
                self.seconds[int(second)] = defaultdict(Bucket, {cls: Bucket.from_dict(d) for cls, d in per.items()})
            self.end_s = max(self.end_s, end_s)

    def buckets(self, t0_s: float, t1_s: float) -> tuple[dict[str, Bucket], int]:
        """Return each class's bucket merged over the whole seconds inside [t0_s, t1_s), and how many seconds."""
        first, last = max(0, math.ceil(t0_s)), math.floor(t1_s)
        merged: dict[str, Bucket] = defaultdict(Bucket)
        with self.lock:
            for second in range(first, last):
                for cls, bucket in self.seconds.get(second, {}).items():
                    merged[cls].merge(bucket)
        return dict(merged), max(0, last - first)

    def window(self, t0_s: float, t1_s: float, include_held: bool = True) -> dict:
        """Return per-class (and 'all') figures over the whole seconds inside [t0_s, t1_s), run-relative.

        Latency percentiles come from every sample of those seconds merged: the window's true percentiles.
        Each row also says how many `seconds` it covers and its `span_s` (first, end).
        """
        merged, seconds = self.buckets(t0_s, t1_s)
        first = max(0, math.ceil(t0_s))
        out = window_rows(merged, seconds, include_held)
        for row in out.values():
            row["span_s"] = (first, first + seconds)
        return out

    def summary(self) -> dict:
        """Return run totals per class and for 'all': counts, errors by kind, rates, percentiles, lateness."""
        with self.lock:
            seconds = max(self.end_s - self.warmup_s, 1e-9)
            merged, out = Bucket(Histogram), {}
            for cls, bucket in sorted(self.totals.items()):
                merged.merge(bucket)
                out[cls] = _summary(bucket, seconds)
            out[ALL] = _summary(merged, seconds)
            return out


def window_rows(merged: dict[str, Bucket], seconds: int, include_held: bool = True) -> dict:
    """Return per-class rows (and 'all') of merged buckets covering `seconds`."""
    everything = Bucket()
    out = {}
    for cls, bucket in sorted(merged.items()):
        everything.merge(bucket)
        out[cls] = bucket.row(seconds, include_held)
    out[ALL] = everything.row(seconds, include_held)
    for row in out.values():
        row["seconds"] = seconds
    return out


def _summary(bucket: Bucket, seconds: float) -> dict:
    row = bucket.row(seconds)
    row["elapsed_s"] = seconds
    row["mean_ms"] = bucket.latencies.mean_s() * 1000.0 if len(bucket.latencies) else None
    late = percentiles_ms(bucket.lateness)
    row["lateness_ms"] = {"p50": late["p50_ms"], "p99": late["p99_ms"]}
    return row
