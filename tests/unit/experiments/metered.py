"""A FakeLab whose meter reads its simulated server, for the studies the unit tier runs on it.

The FakeLab (tests/fakes/fake_lab.py) simulates its server second by second as it is read, but its meter — the real
Lab's — would scrape the server's address over HTTP, where nothing answers. A study on a FakeLab measures through
metered(fake): the meter's edges catch the simulation up to now, then read the simulated /metrics and statistics.
"""
from __future__ import annotations

from app.timeline.meter import Meter
from tests.fakes.fake_lab import FakeLab


def metered(fake: FakeLab) -> FakeLab:
    """Return fake with a meter that reads its simulated server (catching up to now first)."""
    def fetch(url: str) -> str:
        fake.catch_up()
        return fake.sim.fetch(url)

    def meter(model: str, slas_s: dict[str, float] | None = None) -> Meter:
        return Meter(fake._load, fake.server_facts().endpoint, model, slas_s, fetch=fetch)  # the Lab's own generator

    fake.meter = meter
    return fake
