"""Load the exposition text and stats JSON captured from a real server (see fixtures/README.md)."""
from __future__ import annotations

from pathlib import Path

from app.metrics.scrape import Scrape, parse_metrics
from app.metrics.statistics_api import ModelStats, parse_stats

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NAMES = ("s0_idle", "s1_after_200", "s2_after_300", "s3_after_config_reload", "s4_after_unload_load")


def prom(name: str) -> str:
    """Return a captured /metrics body."""
    return (FIXTURES / f"{name}.prom").read_text()


def stats_text(name: str) -> str:
    """Return a captured /v2/models/stats body."""
    return (FIXTURES / f"{name}.stats.json").read_text()


def scrape(name: str, t: float) -> Scrape:
    """Return a captured /metrics body parsed as if read at time t."""
    return parse_metrics(prom(name), t)


def stats(name: str, model: str = "gpu_sim") -> ModelStats:
    """Return one model's captured statistics."""
    return parse_stats(stats_text(name))[model]
