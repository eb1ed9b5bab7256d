"""A fleet's figures through Prometheus's HTTP API (PromQL over httpx): per replica and for the fleet.

Every figure is the direct scrape's (metrics/window.server_figures) computed from counter differences over
the window — here Prometheus's `increase(counter[W])`, which handles counter resets and extrapolates to the
window's edges by at most about one scrape interval (so per-request averages and batch sizes, being ratios of
two increases, are exact; counts and rates may read up to one interval's share high). Per replica is
`sum by (instance)`, the fleet `sum by (model)`. The pending-request gauge is averaged over the window
(`avg_over_time`) and its trend is `deriv` (requests per second): a growing queue on one replica shows there.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

import httpx

from app.metrics.scrape import COUNTERS, FAILURE, PENDING
from app.metrics.window import CounterDelta, server_figures

FLEET = "fleet"
_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


class PromQLError(RuntimeError):
    """Prometheus did not answer, or refused a query."""


@dataclass(frozen=True)
class Replica:
    """One replica's (or the fleet's) figures over a window."""

    name: str
    figures: dict


class PromQLSource:
    """Ask one Prometheus for the figures of a model over a window, per replica and for the fleet."""

    def __init__(self, base_url: str, job: str | None = None, timeout_s: float = 5.0,
                 client: httpx.Client | None = None) -> None:
        if job is not None and not _NAME.match(job):
            raise ValueError(f"a Prometheus job name is letters, digits, _ . -; got {job!r}")
        self.base_url, self.job = base_url.rstrip("/"), job
        self.client = client or httpx.Client(timeout=timeout_s, trust_env=False)

    def close(self) -> None:
        self.client.close()

    def query(self, expr: str, at: float | None = None) -> list[tuple[dict, float]]:
        """Return an instant vector: (labels, value) per series; PromQLError when it fails."""
        params = {"query": expr, **({"time": f"{at:.3f}"} if at is not None else {})}
        try:
            resp = self.client.get(f"{self.base_url}/api/v1/query", params=params)
            body = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise PromQLError(f"Prometheus at {self.base_url} did not answer: {exc}") from exc
        if body.get("status") != "success":
            raise PromQLError(f"Prometheus refused {expr!r}: {body.get('error', resp.text[:200])}")
        return [(s["metric"], float(s["value"][1])) for s in body["data"]["result"]]

    def replicas(self, model: str, at: float | None = None) -> list[str]:
        """Return the replicas (instance labels) that export the model's series."""
        return sorted({labels.get("instance", "") for labels, _ in
                       self.query(f"count by (instance) ({COUNTERS[0]}{{{self._selector(model)}}})", at)})

    def window(self, model: str, seconds: int, at: float | None = None) -> dict[str, dict]:
        """Return {replica: figures, 'fleet': figures} for the `seconds` up to `at` (default: now)."""
        at = time.time() if at is None else at
        seconds = max(1, int(seconds))
        sel, span = self._selector(model), f"[{seconds}s]"
        per: dict[str, dict] = {}
        fleet = {"counters": {}, "failures": {}}
        for counter in COUNTERS:
            for labels, value in self.query(f"sum by (instance) (increase({counter}{{{sel}}}{span}))", at):
                per.setdefault(labels.get("instance", ""), {"counters": {}, "failures": {}})["counters"][counter] = value
            for _, value in self.query(f"sum by (model) (increase({counter}{{{sel}}}{span}))", at):
                fleet["counters"][counter] = value
        for labels, value in self.query(f"sum by (instance, reason) (increase({FAILURE}{{{sel}}}{span}))", at):
            per.setdefault(labels.get("instance", ""), {"counters": {}, "failures": {}})["failures"][
                labels.get("reason", "UNKNOWN")] = value
        for labels, value in self.query(f"sum by (reason) (increase({FAILURE}{{{sel}}}{span}))", at):
            fleet["failures"][labels.get("reason", "UNKNOWN")] = value
        out = {name: server_figures(CounterDelta(float(seconds), v["counters"], v["failures"]))
               for name, v in per.items()}
        out[FLEET] = server_figures(CounterDelta(float(seconds), fleet["counters"], fleet["failures"]))
        for by, target in (("instance", None), ("model", FLEET)):
            for labels, value in self.query(f"sum by ({by}) (avg_over_time({PENDING}{{{sel}}}{span}))", at):
                out.setdefault(target or labels.get("instance", ""), {})["pending"] = value
            for labels, value in self.query(f"sum by ({by}) (deriv({PENDING}{{{sel}}}{span}))", at):
                out.setdefault(target or labels.get("instance", ""), {})["pending_trend"] = value
        return out

    def _selector(self, model: str) -> str:
        if not _NAME.match(model):
            raise ValueError(f"a model name is letters, digits, _ . -; got {model!r}")
        return f'model="{model}"' + (f',job="{self.job}"' if self.job else "")


def balance(figures: dict[str, dict]) -> float | None:
    """Return how evenly the replicas serve: the busiest replica's request rate ÷ the idlest's (1 = even)."""
    rates = [f.get("request_rps") or 0.0 for name, f in figures.items() if name != FLEET]
    if len(rates) < 2 or not max(rates):
        return None
    return max(rates) / min(rates) if min(rates) else float("inf")
