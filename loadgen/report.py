"""Run summaries for people (perf_analyzer-like text) and for programs (JSON)."""
from __future__ import annotations

from loadgen.spec import LoadSpec, Mode
from loadgen.specfile import spec_to_dict
from loadgen.stats import ALL, QUANTILES


def _us(ms: float | None) -> float | None:
    return None if ms is None else ms * 1000.0


def class_json(row: dict) -> dict:
    """Return one class's totals in the JSON summary's shape."""
    failed = {k: n for k, n in row["errors_by_kind"].items() if k != "cancelled"}
    return {
        "throughput_rps": row["throughput_rps"],
        "goodput_rps": row["goodput_rps"],
        "latency_us": {f"p{q}": _us(row[f"p{q}_ms"]) for q in QUANTILES} | {"avg": _us(row["mean_ms"])},
        "requests": {
            "sent": row["sent"], "first_attempts": row["requests"], "ok": row["ok"], "failed": failed,
            "failed_total": row["failed"], "late": row["late"], "retries": row["retries"],
            "cancelled": row["cancelled"],
        },
        "lateness_us": {k: _us(v) for k, v in row["lateness_ms"].items()},
    }


def json_summary(summary: dict, spec: LoadSpec) -> dict:
    """Return the run's JSON summary: overall fields at the top, then one entry per class."""
    out = class_json(summary[ALL])
    out["elapsed_s"] = summary[ALL]["elapsed_s"]
    out["classes"] = {cls: class_json(row) for cls, row in summary.items() if cls != ALL}
    out["spec"] = spec_to_dict(spec)
    return out


def describe_load(spec: LoadSpec) -> str:
    """Return one line on the load: mode, concurrency or rate and arrivals, and the bound."""
    if spec.mode is Mode.CLOSED:
        load = f"closed loop, concurrency {spec.concurrency}"
    else:
        load = f"open loop, {spec.arrival.kind.value} arrivals at {spec.rate:g} req/s"
    bounds = []
    if spec.duration_s:
        bounds.append(f"{spec.duration_s:g} s")
    if spec.max_requests:
        bounds.append(f"{spec.max_requests} requests")
    return f"{load}; bound: {' or '.join(bounds) or 'until stopped'}"


def format_summary(summary: dict, spec: LoadSpec) -> str:
    """Return a perf_analyzer-like text summary, overall then per class."""
    lines = ["*** Measurement Settings ***", f"  {describe_load(spec)}", ""]
    classes = [(c, r) for c, r in summary.items() if c != ALL]
    for cls, row in [(ALL, summary[ALL])] + (classes if len(classes) > 1 else []):
        lines += [f"Client ({'all classes' if cls == ALL else 'class ' + cls}):", *_client_lines(row), ""]
    return "\n".join(lines).rstrip() + "\n"


def _client_lines(row: dict) -> list[str]:
    lines = [
        f"  Request count: {row['requests']} (attempts {row['sent']}, retries {row['retries']})",
        f"  Throughput: {row['throughput_rps']:.2f} infer/sec",
        f"  Goodput: {row['goodput_rps']:.2f} infer/sec (ok within the SLA)",
    ]
    if row["mean_ms"] is not None:
        lines.append(f"  Avg latency: {row['mean_ms'] * 1000:.0f} usec")
        lines += [f"  p{q} latency: {row[f'p{q}_ms'] * 1000:.0f} usec" for q in QUANTILES]
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(row["errors_by_kind"].items()))
    lines.append(f"  Failed: {row['failed']}" + (f" ({kinds})" if kinds else ""))
    late = row["lateness_ms"]
    if late["p99"]:  # closed loop sends when ready: never late
        lines.append(f"  Late: {row['late']} (send lateness p50 {late['p50'] * 1000:.0f} usec, "
                     f"p99 {late['p99'] * 1000:.0f} usec)")
    return lines
