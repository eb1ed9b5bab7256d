"""A request-rate trace from Prometheus: the range query's request, and its matrix answer read as a RateTrace.
The HTTP client is injected (httpx-like `get(url, params=, timeout=)`), so everything here is testable offline."""
from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from urllib.parse import urlsplit

from loadgen.rate_trace.rate_trace import MAX_HISTORY_S, RateTrace, TraceError, rate_value, span_text
from loadgen.rate_trace.grid import Row, assemble, seconds

PROMETHEUS_MAX_POINTS = 11_000  # Prometheus refuses range queries of more points per series
RANGE_QUERY_PATH = "/api/v1/query_range"
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800, "y": 31_536_000}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")


def promql_range_query(query: str, start: float | str | datetime, end: float | str | datetime,
                       step: float | str) -> tuple[str, dict[str, str]]:
    """Return (path, params) of Prometheus's range query; start/end: unix seconds, ISO-8601 or datetime; step:
    seconds or a duration like '1m'."""
    if not isinstance(query, str) or not query.strip():
        raise TraceError("the PromQL query is empty: write one, e.g. sum(rate(nv_inference_request_success[1m]))")
    t0, t1, step_s = seconds(start, "start"), seconds(end, "end"), _duration(step)
    if t1 <= t0:
        raise TraceError(f"end ({_iso(t1)}) must come after start ({_iso(t0)})")
    if t1 - t0 > MAX_HISTORY_S:
        raise TraceError(f"the range is {span_text(t1 - t0)}; a trace holds at most 7 days: shorten it")
    points = int((t1 - t0) // step_s) + 1
    if points > PROMETHEUS_MAX_POINTS:
        raise TraceError(f"step {step_s:g} s over {span_text(t1 - t0)} is {points:,} points; Prometheus answers at "
                         f"most {PROMETHEUS_MAX_POINTS:,} a series: use a step of at least "
                         f"{math.ceil((t1 - t0) / (PROMETHEUS_MAX_POINTS - 1))} s")
    return RANGE_QUERY_PATH, {"query": query.strip(), "start": _unix(t0), "end": _unix(t1), "step": f"{step_s:g}"}


def fetch_rate_trace(base_url: str, query: str, start: float | str | datetime, end: float | str | datetime,
                     step: float | str, client, timeout_s: float = 30.0) -> RateTrace:
    """Ask Prometheus at base_url (http or https) for a range query through the injected client."""
    parts = urlsplit(base_url if isinstance(base_url, str) else "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise TraceError(f"Prometheus URL {base_url!r}: write http:// or https:// and a host, e.g. "
                         "http://localhost:9090")
    path, params = promql_range_query(query, start, end, step)
    url = base_url.rstrip("/") + path
    try:
        response = client.get(url, params=params, timeout=timeout_s)
    except Exception as exc:  # the client is injected: its error types are not ours to know
        raise TraceError(f"Prometheus at {base_url} did not answer: {exc}") from exc
    try:
        body = response.json()
    except ValueError:
        raise TraceError(f"{url} answered HTTP {response.status_code} without JSON: is {base_url} a Prometheus "
                         "server?") from None
    if not isinstance(body, dict):
        raise TraceError(f"{url} answered JSON that is not Prometheus's: is {base_url} a Prometheus server?")
    source = f"Prometheus {base_url}: {params['query']} from {_iso(float(params['start']))} step {params['step']} s"
    return trace_from_prometheus(body, source)


def trace_from_prometheus(body: dict, source: str) -> RateTrace:
    """Return the trace in a Prometheus query_range answer: one class per series when there are several."""
    if body.get("status") != "success":
        raise TraceError(f"{source}: Prometheus refused the query ({body.get('errorType', 'no status')}): "
                         f"{body.get('error', 'the answer has no status success')}")
    data = body.get("data") if isinstance(body.get("data"), dict) else {}
    kind = data.get("resultType")
    if kind != "matrix":
        raise TraceError(f"{source}: resultType {kind!r}: a trace needs a range query's matrix "
                         f"({RANGE_QUERY_PATH}, not /api/v1/query)")
    result = data.get("result") or []
    if not result:
        raise TraceError(f"{source}: the query matched no series in that time range: check the metric's name and "
                         "labels, and that the range holds data")
    names = _series_names([s.get("metric") or {} for s in result], source)
    rows = []
    for i, series in enumerate(result):
        if not isinstance(series.get("values"), list):
            raise TraceError(f"{source}: data.result[{i}] has no values (native histograms?): query a rate")
        for j, pair in enumerate(series["values"]):
            where = f"{source}: data.result[{i}].values[{j}]"
            if not (isinstance(pair, list) and len(pair) == 2):
                raise TraceError(f"{where}: {pair!r}: each value is [unix time, \"rate\"]")
            rows.append(Row(seconds(pair[0], where), rate_value(pair[1], where), names[i], where))
    return assemble(rows, source)


def _series_names(metrics: list[dict], source: str) -> list[str | None]:
    """Name each series by the labels that differ between them ('gpu_sim', or 'instance=a,job=b')."""
    if len(metrics) == 1:
        return [None]
    keys = sorted({k for m in metrics for k in m if len({str(x.get(k, "")) for x in metrics}) > 1})
    names = [str(m.get(keys[0], "")) if len(keys) == 1 else ",".join(f"{k}={m.get(k, '')}" for k in keys)
             for m in metrics]
    if len(set(names)) != len(names):
        raise TraceError(f"{source}: {len(metrics)} series with the same labels: sum them by a class label in "
                         "PromQL, e.g. sum by (model) (...)")
    return names


def _duration(step: float | str) -> float:
    """Return a step in seconds from a number or a Prometheus duration ('15s', '1m', '1h30m')."""
    if isinstance(step, str) and step.strip() and _DURATION.sub("", step.strip()) == "":
        value = sum(float(n) * _UNITS[u] for n, u in _DURATION.findall(step.strip()))
    else:
        try:
            value = float(step)
        except (TypeError, ValueError):
            raise TraceError(f"step {step!r}: write seconds or a duration like 15s, 1m, 1h30m") from None
    if not (math.isfinite(value) and value > 0):
        raise TraceError(f"step {step!r}: the step must be positive, e.g. 60 or 1m")
    return value


def _unix(t: float) -> str:
    return f"{t:.3f}".rstrip("0").rstrip(".")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")
