"""What a trace-judged sweep prints and writes: its summary lines, its JSON and a small self-contained HTML page."""
from __future__ import annotations

import html

from app.experiments.trace.judge import TraceScore
from app.experiments.trace.trace_sweep import TraceRun, TraceSweepResult


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} ms"


def run_row(run: TraceRun, holds: bool) -> dict:
    """Return one configuration's figures as the table, the JSON and the page show them."""
    s: TraceScore | None = run.score
    row = {"configuration": run.choice.label, "config": run.choice.key, "status": run.status, "holds_sla": holds,
           "note": run.note}
    if s is not None:
        row.update({"goodput_rps": s.goodput_rps, "worst_minute_p99_ms": s.worst_minute_p99_ms,
                    "seconds_over_sla": s.seconds_over, "seconds": s.seconds, "instance_seconds": s.instance_seconds,
                    "instances": s.instances, "p99_ms": s.p99_ms, "sent": s.sent, "answered": s.answered,
                    "failed": s.failed})
    return row


def trace_sweep_summary(result: TraceSweepResult, where: str, code: int) -> tuple[dict, list[str]]:
    """Return the JSON of a finished trace-judged sweep and the lines that say how it ended."""
    plan, verdict = result.plan, result.verdict
    holds = set(verdict.holds) if verdict else set()
    done = [r for r in result.runs if r.status == "done"]
    lines = [f"trace-judged sweep of {plan.model} on {plan.load.describe()}: {result.status} in {result.wall_s:,.0f} s "
             f"— {len(done)} configurations played" + (f" ({result.note})" if result.note else "")]
    for r in result.runs:
        if r.score is None:
            lines.append(f"  {r.choice.label}: {r.note}")
            continue
        s = r.score
        lines.append(f"  {r.choice.label}: goodput {s.goodput_rps:,.1f} req/s, worst-minute p99 "
                     f"{_ms(s.worst_minute_p99_ms)}, {s.seconds_over} of {s.seconds} s over the SLA, "
                     f"{s.instance_seconds:,.0f} instance-seconds" + (" — holds" if r.choice.label in holds else "")
                     + (f" ({r.note})" if r.note else ""))
    if verdict is not None and verdict.pick is not None:
        lines.append(f"recommendation: {verdict.reason}")
    data = {"kind": "trace_sweep", "model": plan.model, "server": where, "study_id": result.study_id,
            "status": result.status, "note": result.note, "wall_s": result.wall_s, "exit_code": code,
            "plan": plan.to_dict(), "verdict": verdict.to_dict() if verdict else None,
            "configurations": [{**run_row(r, r.choice.label in holds),
                                "score": r.score.to_dict() if r.score else None} for r in result.runs]}
    return data, lines


def trace_sweep_html(result: TraceSweepResult) -> str:
    """Return a self-contained HTML page of the sweep: its plan, each configuration's figures, the recommendation."""
    plan, verdict = result.plan, result.verdict
    holds = set(verdict.holds) if verdict else set()
    head = ("configuration", "goodput (req/s)", "worst-minute p99", "seconds over SLA", "instance-seconds", "holds")
    rows = []
    for r in result.runs:
        s = r.score
        cells = ((r.choice.label, f"{s.goodput_rps:,.1f}", _ms(s.worst_minute_p99_ms),
                  f"{s.seconds_over} of {s.seconds}", f"{s.instance_seconds:,.0f}",
                  "yes" if r.choice.label in holds else "no") if s is not None
                 else (r.choice.label, "—", "—", "—", "—", r.note))
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    reason = html.escape(verdict.reason) if verdict else ""
    return ("<!doctype html><meta charset='utf-8'><title>Trace-judged sweep</title>"
            "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}td,th{padding:.3em .8em;"
            "border-bottom:1px solid #ddd;text-align:left}</style>"
            f"<h1>Trace-judged sweep of {html.escape(plan.model)}</h1>"
            f"<p>{html.escape(plan.load.describe())}; SLA p99 {plan.sla_ms:g} ms; seed {plan.seed}; "
            f"status {html.escape(result.status)}.</p>"
            "<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>"
            f"<p><b>Recommendation:</b> {reason}</p>")
