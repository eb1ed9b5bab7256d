"""The words of an A/B verdict: every clear difference first, one plain sentence each, then what showed none.

"B's client p50 is 35 % higher than A's (95 % CI +33 to +36 %): worse." — whichever figure it concerns, a clear
difference is said in a sentence of its own before anything that is not clear; the page and the report show the
same sentences (ABResult.findings). Arms are named by what they change from the baseline, in the knob words of
app.experiments.ab.arms ("delay 500 → 5000 µs"); a field outside those knobs is named by its config.pbtxt field.
"""
from __future__ import annotations

from app.config.errors import ConfigError
from app.config.model_config import ModelConfig, parse_config
from app.config.read import settings_of
from app.experiments.ab.arms import describe_change, summary
from app.experiments.ab.confidence import BETTER, WORSE, Difference
from app.metrics.catalog import fmt
from app.metrics.catalog import label as metric_label
from loadgen.stats import ALL

SHORT = {"goodput_rps": "goodput", "p99_ms": "p99", "throughput_rps": "throughput"}  # the headline figures' names
KNOB_FIELDS = ("max_batch_size", "instance_group", "dynamic_batching", "sequence_batching", "parameters")
UNREADABLE = "a config that could not be read"


def _other_fields(old: ModelConfig, new: ModelConfig) -> list[str]:
    """Return the config.pbtxt fields outside the concept knobs that differ, as '<field> changed'."""
    names = {f.name for f, _ in old.ListFields()} | {f.name for f, _ in new.ListFields()}
    return [f"{name} changed" for name in sorted(names - set(KNOB_FIELDS)) if getattr(old, name) != getattr(new, name)]


def change_words(old_text: str, new_text: str) -> str:
    """Return what new_text changes from old_text in words, e.g. 'instances 1 → 2, delay 500 → 2000 µs'."""
    try:
        old, new = parse_config(old_text), parse_config(new_text)
        words = [*describe_change(settings_of(old), settings_of(new)), *_other_fields(old, new)]
    except (ConfigError, ValueError):
        return "the same config" if old_text == new_text else UNREADABLE
    return ", ".join(words) or "the same config"


def config_words(text: str) -> str:
    """Return a config's knobs in words, e.g. '1 instance, max batch 32, delay 500 µs, preferred [4, 8]'."""
    try:
        return summary(settings_of(parse_config(text)))
    except (ConfigError, ValueError):
        return UNREADABLE


def _and(words: list[str], last: str = "and") -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {last} {words[-1]}"


def percents(values: tuple[float, ...]) -> list[str]:
    """Return fractions as signed percentages sharing one precision: whole percents unless one is under 10 %."""
    digits = 1 if any(abs(v) < 0.095 for v in values) else 0
    return [f"{v * 100:+.{digits}f}" for v in values]


def figure_name(key: str, cls: str) -> str:
    """Return a figure's name in a sentence, e.g. 'client p99' or 'client p99 [gold]'."""
    return metric_label(key, False) + ("" if cls == ALL else f" [{cls}]")


def sentence(who: str, base: str, cls: str, d: Difference) -> str:
    """Return one difference as a plain sentence, e.g. "B's client p50 is 35 % higher than A's (95 % CI +33 to
    +36 %): worse." """
    tag = f": {d.verdict}" if d.verdict in (BETTER, WORSE) else ""
    name = figure_name(d.key, cls)
    if d.relative is None or d.relative_interval is None:  # A's mean is 0: say it in the figure's unit
        low, high = fmt(d.key, d.low, unit=False), fmt(d.key, d.high, unit=False)
        return (f"{who}'s {name} is {fmt(d.key, abs(d.diff))} {'higher' if d.diff > 0 else 'lower'} than "
                f"{base}'s ({d.level_text} CI {low} to {high}){tag}.")
    size, low, high = percents((d.relative, *d.relative_interval))
    return (f"{who}'s {name} is {size.lstrip('+-')} % {'higher' if d.relative > 0 else 'lower'} than {base}'s "
            f"({d.level_text} CI {low} to {high} %){tag}.")


def findings(title: str, who: str, base: str, diffs: list[tuple[str, Difference]], headline: tuple[str, ...],
             min_effect: float) -> list[str]:
    """Return the verdict's sentences: an opening, the clear differences (headline figures in headline order, then
    the others), then which headline figures showed no clear difference."""
    if not diffs:
        return [f"{title} against {base}: not enough complete trials to say."]
    n = diffs[0][1].n
    main = {d.key: d for c, d in diffs if c == ALL and d.key in headline}
    clear_main = [main[k] for k in headline if k in main and main[k].clear]
    leads = [(c, d) for c, d in diffs if d.clear and not (c == ALL and d.key in headline)]
    unclear = [SHORT.get(k, k) for k in headline if k in main and not main[k].clear]
    why = f"every interval includes zero or the difference is under {min_effect:.0%}"
    if not clear_main and not leads:
        which = f"{_and(unclear, 'or')}, nor in any other figure" if unclear else "any figure"
        return [f"{title} against {base} over {n} trials: no clear difference in {which} — {why}."]
    better = [SHORT.get(d.key, d.key) for d in clear_main if d.verdict == BETTER]
    worse = [SHORT.get(d.key, d.key) for d in clear_main if d.verdict == WORSE]
    if better and worse:
        opening = (f"{title} trades against {base} over {n} trials: better on {_and(better)}, "
                   f"worse on {_and(worse)}.")
    elif better or worse:
        opening = f"{title} is {'better' if better else 'worse'} than {base} over {n} trials."
    else:
        opening = f"{title} against {base} over {n} trials:"
    out = [opening, *(sentence(who, base, ALL, d) for d in clear_main), *(sentence(who, base, c, d) for c, d in leads)]
    if unclear:
        out.append(f"No clear difference in {_and(unclear, 'or')} ({why}).")
    return out
