"""The traces shipped in loadgen/traces/: synthetic, deterministic, documented in loadgen/traces/README.md."""
from __future__ import annotations

import math
from pathlib import Path
from random import Random

from loadgen.rate_trace.rate_trace import RateTrace
from loadgen.rate_trace.files import read_rate_csv, write_rate_csv

SHIPPED = Path(__file__).resolve().parents[1] / "traces"
NAMES = ("diurnal", "flash_crowd")
DIURNAL_BURSTS = ((7.5, 15, 3.0), (11.0, 10, 2.0), (16.5, 20, 2.0), (20.5, 15, 2.5))  # start h, minutes, × rate


def make_shipped_traces(seed: int = 28) -> dict[str, RateTrace]:
    """Return the shipped traces, deterministic for the seed (rates rounded to 0.1 req/s as written)."""
    return {"diurnal": _diurnal(Random(seed)), "flash_crowd": _flash_crowd(Random(seed + 1))}


def write_shipped_traces(folder: str | Path = SHIPPED) -> None:
    """Write the shipped traces as FOLDER/NAME.csv."""
    for name, trace in make_shipped_traces().items():
        write_rate_csv(trace, Path(folder) / f"{name}.csv")


def shipped_trace(name: str) -> RateTrace:
    """Read a shipped trace by name: diurnal or flash_crowd."""
    if name not in NAMES:
        raise ValueError(f"no shipped trace {name!r}: use one of {', '.join(NAMES)}")
    return read_rate_csv(SHIPPED / f"{name}.csv")


def _diurnal(rng: Random) -> RateTrace:
    """24 h at 60 s steps: ~40 req/s at night, ~300 mid-day, four bursts of ×2–3 for 10–20 minutes."""
    rates = []
    for i in range(24 * 60):
        h = i / 60
        # A raised cosine with its trough at 01:30 and its peak at 13:30; the power 1.5 flattens the night.
        day = (0.5 - 0.5 * math.cos(2 * math.pi * (h - 1.5) / 24)) ** 1.5
        burst = next((x for start, minutes, x in DIURNAL_BURSTS if start <= h < start + minutes / 60), 1.0)
        rates.append(round((40 + 260 * day) * burst * (1 + rng.gauss(0, 0.04)), 1))
    return RateTrace(tuple(rates), 60.0, source="synthetic: diurnal")


def _flash_crowd(rng: Random) -> RateTrace:
    """1 h at 10 s steps: ~80 req/s, a jump to ~400 within 30 s at 20 min, held 5 min, then a decay."""
    rates = []
    for i in range(360):
        t = i * 10
        if t < 1200:
            level = 80.0
        elif t < 1220:  # the crowd arrives within 30 s: two climbing steps, then the top
            level = 80 + 320 * (t - 1190) / 30
        elif t < 1520:
            level = 400.0
        else:  # it leaves with a 5-minute time constant
            level = 80 + 320 * math.exp(-(t - 1520) / 300)
        rates.append(round(level * (1 + rng.gauss(0, 0.05)), 1))
    return RateTrace(tuple(rates), 10.0, source="synthetic: flash crowd")
