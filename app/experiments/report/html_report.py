"""Self-contained HTML reports of a sweep or an A/B comparison, for people who were not in the session.

One file, no server, no network: the charts are inline SVG rendered by vl-convert, the style is inline,
there are no scripts, fonts or images to fetch (a Content-Security-Policy says so to the browser), and
every text that comes from data is HTML-escaped. A simulated model (a labelled cost model) says so under the
title; a comparison's arms are named by what they change; a caution comes before the recommendation it qualifies.
"""
from __future__ import annotations

import time
from html import escape

import altair as alt
import vl_convert

from app.config.errors import ConfigError
from app.config.history import unified_diff
from app.config.model_config import format_config, parse_config
from app.experiments.ab.comparison import ABResult
from app.experiments.report.study_charts import (
    ab_differences, ab_timeline, ab_trials, load_text, pareto_chart, sweep_by_load, sweep_curves,
)
from app.experiments.report.environment import simulated
from app.experiments.report.export import perf_analyzer_command, shell_line
from app.experiments.sweep.recommend import recommendation_text
from app.experiments.sweep.space import EDGE, SearchSpace
from app.store.database import DONE, FAILED, Study
from app.experiments.sweep.sweeper import Point, operating_point
from app.metrics.catalog import fmt, label
from app.timeline.figures import Figures
from loadgen.behind import sent_behind
from loadgen.report import describe_load
from loadgen.stats import ALL

POINT_KEYS = ("throughput_rps", "goodput_rps", "p50_ms", "p99_ms", "rejected", "avg_batch", "queue_us", "compute_us")
FIGURES_HEAD = [*(label(k) for k in POINT_KEYS), "latency samples"]
ENV_LABELS = {"server_version": "server version", "server": "server", "model": "model", "cpu": "CPU",
              "cores": "CPU cores", "memory_gib": "memory (GiB)", "gpus": "GPUs", "platform": "platform",
              "python": "Python", "lab_commit": "lab commit", "repository": "model repository",
              "repository_commit": "model repository's git commit",
              "repository_changes": "model repository files that differed from that commit at the start",
              "recorded_at": "recorded at"}
CSS = """body{font:14px/1.45 system-ui,sans-serif;color:#222;max-width:1180px;margin:24px auto;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
.meta{color:#555}.note{background:#fff8e1;padding:6px 10px}.sim{background:#e8eef8;padding:6px 10px}
.verdict{font-size:15px;background:#eef6ee;padding:8px 12px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;font-size:13px}
td.n{text-align:right;font-variant-numeric:tabular-nums}tr.best{background:#e6f4e6}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}.add{color:#1a7f37}.del{color:#c62828}
figure{margin:16px 0}svg{max-width:100%;height:auto}.wide{overflow-x:auto}"""
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def svg(chart: alt.TopLevelMixin) -> str:
    """Return the chart as an inline SVG element (vl-convert: no browser, no network). Not validated against the
    Vega-Lite schema here (a third of a report's time): tests/unit/experiments/report/test_study_charts.py validates
    every chart."""
    return vl_convert.vegalite_to_svg(chart.to_json(validate=False))


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(t)) if t else "—"


def _kv(pairs: list[tuple[str, object]]) -> str:
    return "<table>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in pairs) + "</table>"


def _table(head: list[str], rows: list[list], classes: list[str] | None = None) -> str:
    """Return a table of escaped cells: a str, or a (text, True) figure that aligns right."""
    body = "".join(f"<tr{f' class={c}' if c else ''}>" + "".join(
        f"<td class=n>{escape(v[0])}</td>" if isinstance(v, tuple) else f"<td>{escape(v)}</td>" for v in row)
        + "</tr>" for row, c in zip(rows, classes or [""] * len(rows)))
    return ("<div class=wide><table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>" + body
            + "</table></div>")


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def _diff(old: str, new: str, old_label: str, new_label: str) -> str:
    """Return the unified diff of two configs (canonical text) with added and removed lines coloured."""
    text = unified_diff(_canonical(old), _canonical(new), old_label, new_label)
    if not text:
        return "<p>No difference: both are the same config.</p>"
    return "<pre>" + "".join(map(_diff_line, text.splitlines(keepends=True))) + "</pre>"


def _diff_line(line: str) -> str:
    kind = "" if line[:3] in ("+++", "---") else {"+": " class=add", "-": " class=del"}.get(line[:1], "")
    return f"<span{kind}>{escape(line)}</span>"


def _canonical(text: str) -> str:
    try:
        return format_config(parse_config(text))
    except ConfigError:
        return text


def _num(key: str, value) -> tuple[str, bool]:
    """Return a figure cell: the value at the catalog's precision, no unit (the column says it)."""
    return fmt(key, value, unit=False), True


def _figures(figures: Figures) -> list[tuple[str, bool]]:
    """Return the POINT_KEYS cells and the latency sample count of a point's or a trial's figures."""
    return [*(_num(k, figures.get(k)) for k in POINT_KEYS), (f"{figures.samples():,}", True)]


def _changes(env: dict) -> str:
    """Return whether the model repository's files differed from its commit, in words."""
    if "repository_changes" not in env:
        return "not recorded with this study"
    changes = env["repository_changes"]
    if changes is None:
        return ("unknown: the lab cannot see the repository (a remote server)" if env.get("repository") is None
                else "unknown: the repository is not in git (or git was not available)")
    if not changes:
        return "none: every file is as committed"
    return f"{len(changes)}: " + ", ".join(changes)


def _environment(env: dict, seed, sim: str) -> str:
    shown = {k: v for k, v in env.items() if k not in ("repository_changes", "recorded_at")}
    pairs = [(ENV_LABELS.get(k, k), "—" if v is None else v) for k, v in shown.items()]
    if env:
        pairs.append((ENV_LABELS["repository_changes"], _changes(env)))
        pairs.append((ENV_LABELS["recorded_at"], env.get("recorded_at") or "—"))
    missing = "" if env else "<p>No environment was recorded with this study.</p>"
    device = [("simulated device", sim)] if sim else []
    return missing + _kv([*device, *pairs, ("traffic seed", "—" if seed is None else seed)])


def _simulated(study: Study, texts: list[str]) -> str:
    """Return what simulated device the study's model is ('' for a real model), from its starting config or any
    config it measured."""
    return next((words for text in (study.base_config, *texts) if text and (words := simulated(text))), "")


def _page(title: str, study: Study, sections: list[tuple[str, str]], sim: str = "") -> str:
    took = f" ({study.ended_at - study.created_at:,.0f} s)" if study.ended_at else ""
    meta = (f"Study {study.id if study.id is not None else '—'} · model {study.model} · status {study.status} · "
            f"started {_when(study.created_at)} · ended {_when(study.ended_at)}{took}")
    note = f"<p class=note>{escape(study.note)}</p>" if study.note else ""
    if sim:
        note = f"<p class=sim><b>Simulated model:</b> {escape(study.model)} is {escape(sim)}</p>" + note
    body = "".join(f"<section><h2>{escape(h)}</h2>{html}</section>" for h, html in sections)
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<meta http-equiv=Content-Security-Policy content=\"{CSP}\"><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1><p class=meta>{escape(meta)}</p>{note}"
            f"{body}</body></html>")


def _figures_html(charts: list) -> str:
    return "".join(f"<figure>{svg(c)}</figure>" for c in charts)


# --- sweeps ---------------------------------------------------------------------------------------------
def sweep_report(study: Study, points: list[Point], space: SearchSpace) -> str:
    """Return the HTML report of a sweep: operating point, curves, definition, environment, points, configs."""
    best = operating_point(space, points)
    sim = _simulated(study, [p.config_text for p in points if p.config_text])
    sections = [("Result", _sweep_verdict(study, points, space, best)),
                ("Charts", _figures_html([sweep_curves(points, space), sweep_by_load(points, space),
                                          pareto_chart(points, space)])),
                ("What was searched", _sweep_definition(study, space)),
                ("Where it ran", _environment(study.env, (study.definition.get("options") or {}).get("seed"), sim)),
                ("Every point", _points_table(points, space, best))]
    if best is not None:
        sections += [("Recommended config against the starting config",
                      _diff(study.base_config, best.config_text, "starting config", "recommended")),
                     ("Recommended config.pbtxt", _pre(_canonical(best.config_text)))]
    return _page(f"Sweep: {study.label}", study, sections, sim)


def _sweep_verdict(study: Study, points: list[Point], space: SearchSpace, best: Point | None) -> str:
    done = [p for p in points if p.status == DONE]
    failed = sorted({p.choice.label for p in points if p.status == FAILED})
    counts = (f"{len(done)} points measured over {len({p.choice.key for p in done})} configurations; "
              f"{sum(not p.stable for p in done)} never settled; the load generator fell behind at "
              f"{sum(p.behind is not None for p in done)}.")
    if failed:
        counts += f" Could not be applied: {'; '.join(failed)}."
    skipped = "".join(f"<li>{escape(s)}</li>" for s in study.result.get("skipped") or [])
    skipped = f"<p>Not measured (the adaptive search ruled them out):</p><ul>{skipped}</ul>" if skipped else ""
    if best is None:
        text = (f"No measured point kept its p99 within the {space.p99_budget_ms:g} ms budget"
                + (f" with at least {space.min_throughput_rps:g} req/s" if space.min_throughput_rps else "")
                + ": there is no operating point to recommend; try lower loads or other configurations.")
        return f"<p class=verdict>{escape(text)}</p><p>{escape(counts)}</p>{skipped}"
    text = (f"Serve {best.choice.label} at {load_text(space, best.load)}: {fmt('goodput_rps', best.goodput)} goodput "
            f"within the SLA, p99 {fmt('p99_ms', best.p99)} against a {space.p99_budget_ms:g} ms budget, "
            f"throughput {fmt('throughput_rps', best.throughput)} — the most goodput of any point inside the SLA"
            + (", none holding it with room: on the budget's edge." if space.sla_state(best.p99, best.throughput) == EDGE
               else " with room." if space.p99_headroom else "."))
    if said := recommendation_text(space, points, study.result):  # its margin, the spread, how often measured
        text += f" {said}"
    caution = f"<p class=note>{escape(f'Caution: {words}.')}</p>" if (words := best.caution()) else ""
    command = shell_line(perf_analyzer_command("localhost:8000", space.model, space.load_kind, best.load,
                                               space.p99_budget_ms))
    return (f"{caution}<p class=verdict>{escape(text)}</p>"
            + _table(FIGURES_HEAD, [_figures(best.figures)])
            + f"<p>{escape(counts)}</p>{skipped}<p>The same point with perf_analyzer (point -u at your server):</p>"
            + _pre(command))


def _sweep_definition(study: Study, space: SearchSpace) -> str:
    options = study.definition.get("options") or {}
    sla = f"client p99 ≤ {space.p99_budget_ms:g} ms" + (
        f" (on its edge within {space.p99_headroom:.0%}: named only when no point has room)"
        if space.p99_headroom else "") + (
        f" and throughput ≥ {space.min_throughput_rps:g} req/s" if space.min_throughput_rps else "")
    pairs = [("model", space.model), ("configurations", "; ".join(c.label for c in space.choices())),
             ("loads", f"{space.load_kind}: " + ", ".join(f"{v:g}" for v in space.loads)), ("SLA", sla),
             ("search", "adaptive (bisects the loads, drops configurations that cannot win)" if space.adaptive
              else "grid (every point)")]
    return _kv(pairs + [(f"measurement: {k}", v) for k, v in options.items()])


def _points_table(points: list[Point], space: SearchSpace, best: Point | None) -> str:
    head = ["configuration", "load", "status", "settled", "SLA", *FIGURES_HEAD, "generator behind", "note"]
    rows = [[p.choice.label, load_text(space, p.load), p.status, "yes" if p.stable else "no",
             space.sla_state(p.p99, p.throughput) if p.status == DONE else "", *_figures(p.figures),
             "" if p.behind is None else sent_behind(p.behind), p.note] for p in points]
    return _table(head, rows, ["best" if best is not None and p.key == best.key else "" for p in points])


# --- A/B comparisons ------------------------------------------------------------------------------------
def ab_report(study: Study, result: ABResult) -> str:
    """Return the HTML report of an A/B comparison: verdicts, charts, plan, environment, trials, config diffs."""
    plan = result.plan
    base, (pick, why) = plan.arms[0], result.recommendation()
    config = {a.name: a.config_text for a in plan.arms}
    charts = [ab_trials(result), *(ab_differences(result, a.name) for a in plan.arms[1:]), ab_timeline(result)]
    sim = _simulated(study, [a.config_text for a in plan.arms])
    sections = [("Result", _ab_verdict(result, why)), ("Charts", _figures_html(charts)),
                ("What was compared", _ab_definition(result)),
                ("Where it ran", _environment(study.env, plan.load_spec().seed, sim)),
                ("Every trial", _trials_table(result))]
    sections += [(f"{result.title(a.name)} against A",
                  _diff(base.config_text, a.config_text, "A", result.letter(a.name))) for a in plan.arms[1:]]
    sections.append((f"Recommended config.pbtxt: {result.title(pick)}", _pre(_canonical(config[pick]))))
    return _page(f"A/B comparison: {study.label}", study, sections, sim)


def _ab_verdict(result: ABResult, why: str) -> str:
    """Return the caution (when there is one), each arm's findings, clear ones first, then the recommendation."""
    caution = f"<p class=note>Caution: {escape(note)}</p>" if (note := result.caution()) else ""
    lines = ""
    for arm in result.plan.arms[1:]:
        opening, *sentences = result.findings(arm.name)
        items = "".join(f"<li>{escape(s)}</li>" for s in sentences)
        lines += f"<p class=verdict>{escape(opening)}</p>" + (f"<ul>{items}</ul>" if items else "")
    advice = ("Recommended, once the caution above is dealt with: " if caution else "Recommended: ") + why
    tables = "".join(f"<h3>{escape(result.title(a.name))} against A</h3>" + _differences_table(result, a.name)
                     for a in result.plan.arms[1:])
    return f"{caution}{lines}<p><b>{escape(advice)}</b></p>{tables}"


def _differences_table(result: ABResult, arm: str) -> str:
    base = "A"
    arm_letter = result.letter(arm)
    rows = []
    for cls, d in result.differences(arm):
        lo, hi = d.relative_interval or (None, None)
        rows.append([label(d.key) + ("" if cls == ALL else f" [{cls}]"), _num(d.key, d.a_mean), _num(d.key, d.b_mean),
                     (f"{d.relative:+.1%}" if d.relative is not None else "—", True),
                     (f"{lo:+.1%} to {hi:+.1%}" if lo is not None else "—", True), (d.level_text, True), d.verdict])
    if not rows:
        return "<p>Fewer than two complete trials: no differences to show.</p>"
    table = _table(["metric [class]", f"{base} mean", f"{arm_letter} mean", "difference", "interval", "level",
                    "verdict"], rows)
    return f"{table}<p>{escape(result.intervals_note())}</p>"


def _ab_definition(result: ABResult) -> str:
    plan = result.plan
    spec = plan.load_spec()
    classes = "; ".join(f"{c.name} (SLA {c.sla_ms:g} ms)" for c in spec.classes)
    arms = [(f"configuration {result.letter(a.name)}" + (" (the baseline)" if i == 0 else ""),
             f"{result.title(a.name)}; chosen as “{a.name}”") for i, a in enumerate(plan.arms)]
    return _kv([("model", plan.model), *arms, ("traffic", describe_load(spec)), ("classes", classes),
                ("trials", f"{plan.trials}, each arm once per trial, order alternating (A B, B A, …)"),
                ("each trial", f"{plan.warmup_s:g} s warm-up dropped, {plan.trial_s:g} s measured in 1 s windows"),
                ("smallest difference called", f"{plan.min_effect:.0%}")])


def _trials_table(result: ABResult) -> str:
    rows = [[result.title(arm.name), str(n + 1), _when(t.figures.t0), *_figures(t.figures)]
            for arm in result.plan.arms for n, t in sorted(result.trials.get(arm.name, {}).items())]
    return _table(["configuration", "trial", "started", *FIGURES_HEAD], rows)
