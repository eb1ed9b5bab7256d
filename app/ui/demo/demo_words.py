"""The presenter's words on /demo: figures, the state of the server, a config change and a verdict in sentences.

Every number said in words comes from the same Figures as the tiles beside it and is formatted by the
same function (`figure`), so a sentence never shows a number a tile does not; the judgment comes from the
diagnosis's one rule (app.diagnosis.patterns). Labels are the metric table's presenter words (catalog.presenter_label);
config field names go to the hover text. No Streamlit here: app.ui.demo.demo_layout draws what these return.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from app.config.settings import DynamicBatching, ModelSettings
from app.diagnosis.patterns import WAITING_SHARE, waiting_driven
from app.diagnosis.diagnose import Diagnosed
from app.timeline.figures import Figures
from app.config.knobs import summarize_change
from app.metrics.catalog import MIN_SAMPLES, fmt, metric, presenter_label
from loadgen.spec import ArrivalKind, LoadSpec, Mode

NONE = "—"


@dataclass(frozen=True)
class Said:
    """A sentence for the audience and what it rests on (config field names, windows) for the hover."""

    text: str
    hover: str = ""


@dataclass(frozen=True)
class Tile:
    """One headline figure: the presenter's label, the value with its unit, a note under it, the hover."""

    key: str
    label: str
    value: str
    note: str = ""
    hover: str = ""


# --- figures ---------------------------------------------------------------------------------------------------
def share(value: float | None) -> str:
    """Return a share as whole percent, rounded down (39.96 % is '39 %': never across the rule's 40 % line)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NONE
    percent = value * 100
    if 0 < percent < 1:
        return "under 1 %"
    return f"{math.floor(percent + 1e-9):.0f} %"


def figure(key: str, value) -> str:
    """Return a figure as /demo shows it everywhere, tiles and sentences alike: at the catalog's precision, with
    its unit ('—' when not measured; shares in whole percent, rounded down)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NONE
    if metric(key).display_unit == "%":
        return share(value)
    return fmt(key, value)


def throughput_key(figures: Figures) -> str:
    """Return the throughput the audience sees: the clients' answers per second, else the server's inferences."""
    return "throughput_rps" if figures.get("throughput_rps") is not None else "infer_rps"


def tiles(figures: Figures) -> list[Tile]:
    """Return the first screen's four tiles: answers per second, p99, batch size, share of time waiting."""
    window = figures.describe()
    return [Tile(key, presenter_label(key), figure(key, figures.get(key)), "",
                 f"{metric(key).description} Shown as {metric(key).label} on the operator's pages; from "
                 f"{metric(key).origin}. Window: {window}.")
            for key in (throughput_key(figures), "p99_ms", "avg_batch", "queue_share")]


def window_words(figures: Figures) -> str:
    """Return the tiles' window and how many answers their percentiles rest on, e.g. 'last 10 s · 4,614 answers'."""
    n = figures.samples()
    few = " — too few for a steady 99 %" if figures.get("p99_ms") is not None and n < MIN_SAMPLES else ""
    return f"Figures of the {figures.describe()} · {n:,} answer{'s' if n != 1 else ''}{few}"


DETAIL_KEYS = ("p50_ms", "queue_us", "compute_us", "request_us", "failed_share")


def detail_tiles(figures: Figures) -> list[Tile]:
    """Return the figures the sentences may also cite (below the first screen), from the same window."""
    failed, ended = figures.failures()
    values = {k: figures.get(k) for k in DETAIL_KEYS}
    values["failed_share"] = failed / ended if ended else None
    return [Tile(k, presenter_label(k), figure(k, v), "", f"{metric(k).description} ({metric(k).label}). "
                 f"Window: {figures.describe()}.") for k, v in values.items()]


# --- what the window says, by the diagnosis's one rule -------------------------------------------------------------
def state_sentence(seen: Diagnosed) -> Said | None:
    """Return one sentence on what the tiles' window shows (None with no answers in it): the diagnosis's most
    actionable finding in plain words, else where a request's time in the server goes."""
    figures, window = seen.figures, seen.symptoms
    if not figures.get("infer_rps") and not figures.samples():
        return None
    findings = {f.pattern: f for f in seen.findings}
    hover = f"The lab's diagnosis of the {figures.describe()}: " + ("; ".join(
        f"{f.title} ({f.evidence})" for f in findings.values()) or "nothing to report") + "."
    failed, ended = figures.failures()
    if "failing" in findings:
        return Said(f"{figure('failed_share', failed / ended)} of requests are failing: the latency figures describe "
                    "only the answered ones.", hover)
    if "stuck" in findings:
        return Said(f"Batches hold {figure('avg_batch', figures.get('avg_batch'))} requests on average: the batcher "
                    "finds nothing to combine — too little traffic, or no time allowed to wait for company.", hover)
    if "B" in findings:
        return Said(f"Requests arrive faster than the server answers them: {figure('queue_share', window.waiting_share)}"
                    " of a request's time in the server is spent waiting, and the queue grows.", hover)
    time_in = time_in_server(figures)
    if "A" in findings and time_in is not None:
        return Said(f"The slowest answers are slow because they wait: {time_in.text[0].lower()}{time_in.text[1:]}",
                    hover)
    if "C" in findings:
        return Said("Bigger batches take longer per request here: the model does not gain from larger batches.", hover)
    return Said(time_in.text, hover) if time_in is not None else None


def time_in_server(figures: Figures) -> Said | None:
    """Return where a request's time in the server goes, judged by the diagnosis's one threshold (WAITING_SHARE),
    with the same figures the tiles show (None when the server answered nothing in the window)."""
    waiting, total = figures.get("queue_us"), figures.get("request_us")
    part = figures.get("queue_share")
    if waiting is None or not total or part is None:
        return None
    line = f"{figure('queue_share', part)} of a request's {figure('request_us', total)} in the server is spent " \
           f"waiting ({figure('queue_us', waiting)})"
    if waiting_driven(part):
        text = f"{line}: the waiting, not the computing, is what to shorten."
    else:
        text = f"{line}: most of it is computing ({figure('compute_us', figures.get('compute_us'))})."
    return Said(text, f"The lab calls a window waiting-driven from {WAITING_SHARE:.0%} of server time spent in the "
                      f"queue (batching delay included); window: {figures.describe()}.")


# --- a change, in words ----------------------------------------------------------------------------------------
def delay_text(us: int | float) -> str:
    """Return microseconds as a person says them: '5 ms', '0.5 ms', '50 µs'."""
    if us >= 100:
        return f"{us / 1000:g} ms"
    return f"{us:g} µs"


def _sizes(sizes: tuple[int, ...]) -> str:
    return " or ".join(str(s) for s in sizes) if len(sizes) <= 2 else f"{', '.join(map(str, sizes[:-1]))} or {sizes[-1]}"


def _instances(settings: ModelSettings) -> int:
    groups = settings.instance_groups
    return sum(g.count for g in groups) if groups else 1


def change_sentences(old: ModelSettings, new: ModelSettings) -> list[str]:
    """Return what a config change means for the audience, one sentence per thing that changed."""
    out: list[str] = []
    if _instances(old) != _instances(new):
        n = _instances(new)
        out.append("one instance now runs at a time" if n == 1 else f"{n} instances now run at once")
    if old.max_batch_size != new.max_batch_size:
        out.append("the model now takes one request at a time (no batching)" if new.max_batch_size == 0 else
                   f"a batch may now hold up to {new.max_batch_size} requests")
    out += _batching_sentences(old.dynamic_batching, new.dynamic_batching)
    if (old.sequence_batching is None) != (new.sequence_batching is None):
        out.append("sequence batching is now on: each sequence keeps its own state" if new.sequence_batching else
                   "sequence batching is now off")
    elif old.sequence_batching != new.sequence_batching:
        out.append("the sequence batcher's settings changed")
    if old.parameters != new.parameters:
        out.append("the model's own parameters changed")
    if not out and old != new:
        out.append("a setting of the model changed")
    return out


def _batching_sentences(old: DynamicBatching | None, new: DynamicBatching | None) -> list[str]:
    if old is None and new is None:
        return []
    if new is None:
        return ["dynamic batching is now off: every request runs on its own"]
    out = []
    if old is None:
        out.append("dynamic batching is now on: requests that wait together run as one batch")
        old = DynamicBatching()
    if old.max_queue_delay_microseconds != new.max_queue_delay_microseconds:
        delay = new.max_queue_delay_microseconds
        out.append(f"the batcher may now wait up to {delay_text(delay)} to fill a batch" if delay else
                   "the batcher no longer waits to fill a batch")
    if old.preferred_batch_sizes != new.preferred_batch_sizes:
        sizes = new.preferred_batch_sizes
        out.append(f"the batcher now aims for batches of {_sizes(sizes)}" if sizes else
                   "the batcher no longer aims for particular batch sizes")
    if old.priority_levels != new.priority_levels:
        out.append(f"requests now come in {new.priority_levels} priority levels" if new.priority_levels else
                   "requests no longer have priorities")
    policies = ("default_queue_policy", "priority_queue_policies", "default_priority_level")
    if any(getattr(old, p) != getattr(new, p) for p in policies):
        out.append("the queue's rules changed: how long a request may wait and how many may queue")
    if old.preserve_ordering != new.preserve_ordering:
        out.append("answers now leave in the order requests came" if new.preserve_ordering else
                   "answers may now leave in any order")
    return out


def change_said(old: ModelSettings, new: ModelSettings) -> Said:
    """Return a config change as one sentence, the config fields it moved on hover."""
    words = change_sentences(old, new)
    text = "; ".join(words) if words else "the same configuration was served again"
    return Said(text[0].upper() + text[1:] + ".", f"config.pbtxt: {summarize_change(old, new)}")


def traffic_words(spec: LoadSpec | None) -> str:
    """Return the load in a presenter's words, e.g. '40 requests per second, arriving at random moments'."""
    if spec is None:
        return "no traffic"
    if spec.mode is Mode.CLOSED:
        load = f"{spec.concurrency} request{'s' if spec.concurrency != 1 else ''} always in flight"
    else:
        how = {ArrivalKind.POISSON: "arriving at random moments", ArrivalKind.CONSTANT: "evenly spaced",
               ArrivalKind.BURSTY: "in bursts"}.get(spec.arrival.kind, f"arriving as a {spec.arrival.kind.value} "
                                                                       "pattern")
        load = f"{spec.rate:,.0f} requests per second, {how}"
    classes = len(spec.classes) + len(spec.sequences)
    return load + (f", in {classes} kinds of traffic" if classes > 1 else "")


# --- a verdict, in words ---------------------------------------------------------------------------------------
_LONG = re.compile(r"(?<![\w.])(-?\d+\.\d{3,})(?![\d])")
_NONE = re.compile(r"\b(None|nan|NaN)\b")
_RATIO = re.compile(r"^(?P<what>.*?) = (?P<a>[^=]+?) / (?P<b>[^=]+?) = (?P<r>[^=]+)$")


def tidy(text: str) -> str:
    """Return machine text with raw floats cut to a sensible precision and None/NaN said as '—'."""
    text = _LONG.sub(lambda m: f"{float(m.group(1)):,.{2 if abs(float(m.group(1))) < 100 else 1}f}", text)
    return _NONE.sub(NONE, text)


@dataclass(frozen=True)
class CheckWords:
    """One check of a verdict said for an audience: held or not, the claim, the measured number, the bar."""

    ok: bool
    sentence: str
    measured: str
    bar: str
    hover: str


def check_words(check: dict) -> CheckWords:
    """Return a scenario's check (claim, measured, margin, ok) in one sentence with its measured number."""
    claim = str(check.get("claim") or "").strip().rstrip(".")
    measured = tidy(str(check.get("measured") or NONE))
    margin = tidy(str(check.get("margin") or ""))
    bar, _, why = margin.partition(" (")
    number = measured
    ratio = _RATIO.match(measured)
    if ratio:  # "p50 increase ÷ 10 ms = 9.8 / 10.0 = 0.98": the audience is told the ratio, the rest on hover
        number = ratio["r"].strip()
    ok = bool(check.get("ok"))
    sentence = claim[:1].upper() + claim[1:] + "."
    return CheckWords(ok, sentence, number, bar.strip(), f"measured: {measured}" + (f"; held to {margin}" if margin
                                                                                      else ""))
