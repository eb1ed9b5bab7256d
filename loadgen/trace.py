"""Read arrival traces: perf_analyzer's --request-intervals files, gap lists or timestamps."""
from __future__ import annotations

from pathlib import Path

# Units of one number per line for each format.
FORMATS = {"intervals_us": 1e-6, "gaps_s": 1.0, "gaps_ms": 1e-3, "timestamps_s": 1.0, "timestamps_ms": 1e-3}


def read_trace(path: str | Path, fmt: str = "intervals_us") -> list[float]:
    """Return the gaps in seconds recorded in a trace file (first number of each line; '#' comments)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r}: use one of {', '.join(FORMATS)}")
    values = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        text = line.split("#", 1)[0].replace(",", " ").split()
        if not text:
            continue
        try:
            values.append(float(text[0]) * FORMATS[fmt])
        except ValueError:
            raise ValueError(f"{path}:{n}: not a number: {text[0]!r}") from None
    if fmt.startswith("timestamps"):
        values = [b - a for a, b in zip(values[:1] + values, values)]  # the first arrives at once
    if not values or any(v < 0 for v in values):
        raise ValueError(f"{path}: a trace needs at least one arrival and no negative gaps (are timestamps sorted?)")
    return values


def write_intervals(path: str | Path, gaps_s: list[float]) -> None:
    """Write gaps as perf_analyzer's --request-intervals file (one integer microsecond count a line)."""
    Path(path).write_text("".join(f"{round(g * 1e6)}\n" for g in gaps_s))


def mean_rate(gaps_s: list[float]) -> float:
    """Return the trace's average arrival rate."""
    total = sum(gaps_s)
    return len(gaps_s) / total if total > 0 else float("inf")
