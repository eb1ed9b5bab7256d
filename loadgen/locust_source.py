"""A Locust master as a client-side source: what its workers send, read from its HTTP stats API (httpx)."""
from __future__ import annotations

from dataclasses import dataclass, field

import httpx

AGGREGATED = "Aggregated"


class LocustUnavailable(RuntimeError):
    """The Locust master did not answer."""


@dataclass(frozen=True)
class LocustStats:
    """One read of a master's /stats/requests: its state, workers and users, and each request entry."""

    url: str
    state: str
    users: int
    workers: int
    rps: float
    fail_rps: float
    requests: int
    failures: int
    classes: list[dict] = field(default_factory=list)  # name, requests, failures, rps, p50/p95/p99 ms


def read_stats(url: str, timeout_s: float = 2.0, client: httpx.Client | None = None) -> LocustStats:
    """Return a master's current stats; LocustUnavailable when it does not answer."""
    base = url.rstrip("/")
    try:
        if client is None:
            with httpx.Client(timeout=timeout_s, trust_env=False) as own:
                body = own.get(f"{base}/stats/requests").json()
        else:
            body = client.get(f"{base}/stats/requests").json()
    except (httpx.HTTPError, ValueError) as exc:
        raise LocustUnavailable(f"no Locust master answers at {base}: {exc}") from exc
    entries = body.get("stats", [])
    total = next((s for s in entries if s.get("name") == AGGREGATED), {})
    classes = [{"class": s["name"], "kind": s.get("method") or "infer", "requests": s["num_requests"],
                "failures": s["num_failures"], "rps": s.get("current_rps"), "p50 (ms)": s.get("median_response_time"),
                "p95 (ms)": s.get("response_time_percentile_0.95"), "p99 (ms)": s.get("response_time_percentile_0.99")}
               for s in entries if s.get("name") != AGGREGATED]
    return LocustStats(base, body.get("state", "?"), int(body.get("user_count") or 0),
                       int(body.get("worker_count") or len(body.get("workers") or [])), float(body.get("total_rps") or 0),
                       float(body.get("total_fail_per_sec") or 0), int(total.get("num_requests") or 0),
                       int(total.get("num_failures") or 0), classes)
