"""A fleet's figures through Prometheus's HTTP API (PromQL over httpx): per replica and for the fleet.

Every figure is the direct scrape's (metrics/window.server_figures) computed from counter differences over
the window — here Prometheus's `increase(counter[W])`, which handles counter resets and extrapolates to the
window's edges by at most about one scrape interval (so per-request averages and batch sizes, being ratios of
two increases read in one query, are exact; counts and rates may read up to one interval's share high). Per replica is
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
_WHAT, _SCOPE = "tbl_figure", "tbl_scope"  # the labels window()'s one query names its rows with
_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


class PromQLError(RuntimeError):
    """Prometheus did not answer, or refused a query."""


@dataclass(frozen=True)
class ReplicaFigures:
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
        try:  # POST: a window's one query is ~4 KB, long for a URL behind some proxies
            resp = self.client.post(f"{self.base_url}/api/v1/query", data=params)
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
        """Return {replica: figures, 'fleet': figures} for the `seconds` up to `at` (default: now).

        One query: Prometheus evaluates it on one view of its data, so every counter's increase reads the same
        scrapes. One query a counter could not: at `at` near now, a scrape taken before `at` but stored between two
        of them entered one counter's window and not the next one's, and queue time per request, a ratio of two
        increases, read 11 % low (ci343, 2026-12-05)."""
        at = time.time() if at is None else at
        seconds = max(1, int(seconds))
        sel, span = self._selector(model), f"[{seconds}s]"

        def both(expr: str, name: str, by: str = "") -> list[str]:
            """The expression summed per replica and for the fleet, each row named (what, scope)."""
            named = f'label_replace(sum by (instance{by}) ({expr}), "{_WHAT}", "{name}", "", "")'
            fleet = f'label_replace(sum by (model{by}) ({expr}), "{_WHAT}", "{name}", "", "")'
            return [named, f'label_replace({fleet}, "{_SCOPE}", "{FLEET}", "", "")']

        parts = [p for counter in COUNTERS for p in both(f"increase({counter}{{{sel}}}{span})", counter)]
        parts += both(f"increase({FAILURE}{{{sel}}}{span})", FAILURE, ", reason")
        parts += both(f"avg_over_time({PENDING}{{{sel}}}{span})", "pending")
        parts += both(f"deriv({PENDING}{{{sel}}}{span})", "pending_trend")
        counted: dict[str, dict] = {}
        gauges: dict[str, dict] = {}
        for labels, value in self.query(" or ".join(parts), at):
            what = labels.get(_WHAT, "")
            target = FLEET if labels.get(_SCOPE) == FLEET else labels.get("instance", "")
            if what in ("pending", "pending_trend"):
                gauges.setdefault(target, {})[what] = value
                continue
            counts = counted.setdefault(target, {"counters": {}, "failures": {}})
            if what == FAILURE:
                counts["failures"][labels.get("reason", "UNKNOWN")] = value
            else:
                counts["counters"][what] = value
        counted.setdefault(FLEET, {"counters": {}, "failures": {}})
        out = {name: server_figures(CounterDelta(float(seconds), v["counters"], v["failures"]))
               for name, v in counted.items()}
        for name, values in gauges.items():
            out.setdefault(name, {}).update(values)
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
