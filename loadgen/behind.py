"""The one rule for "the load generator fell behind its schedule", and its words: live, sweep points, A/B trials,
scenario phases and reports all judge with behind() and say it with the functions below."""
from __future__ import annotations

from loadgen.spec import ALL

BEHIND_S = 0.010  # a first attempt sent this long after its slot: the generator fell behind, not just jitter
BEHIND_SHARE = 0.05  # more first attempts than this sent over BEHIND_S late: the generator fell behind
MIN_JUDGED = 20  # fewer first attempts than this: too few to judge the schedule
BEHIND_MS = BEHIND_S * 1000


def behind(row: dict) -> float | None:
    """Return the share of first attempts sent over BEHIND_MS after their slot when the generator fell behind its
    schedule (more than BEHIND_SHARE of them), else None.

    This is the one rule for "the load generator is not keeping up", live and in experiments. An open loop
    never drops a slot: a generator that falls behind (its process, or its connections, busy) sends late, and
    later and later. A busy machine's scheduler delays sends by a few ms without the load changing (measured:
    loadgen.stats.BEHIND_S), so only sends past BEHIND_MS count. The rate sent is no measure of it: a Poisson
    or bursty stream sends fewer than its mean in many windows by chance.
    """
    requests = row.get("requests") or 0
    if requests < MIN_JUDGED:
        return None
    share = (row.get("behind") or 0) / requests
    return share if share > BEHIND_SHARE else None


def behind_in(client: dict) -> float | None:
    """Return behind() of the 'all' row of per-class client figures ({'all': row, class: row, ...})."""
    return behind((client or {}).get(ALL) or {})


def sent_behind(share: float) -> str:
    """Return a share of requests sent behind their slot as the tables and logs say it: '12% sent over 10 ms late'."""
    return f"{share:.0%} sent over {BEHIND_MS:g} ms late"


def behind_text(share: float, where: str) -> str:
    """Return the words for a generator that fell behind: `where` says when ('over the last 10 s', ...)."""
    return (f"The load generator is not keeping up: {share:.0%} of requests went out more than {BEHIND_MS:g} ms "
            f"after their slot {where} (its process or its connections are busy), so the server saw a smoother, "
            "lighter load than asked. Lower the rate or what else runs on this machine.")


def fell_behind(count: int, total: int, unit: str, which: str) -> str:
    """Return how a study says some of its parts ran behind: 'The load generator fell behind its schedule in 2 of 8
    trials (more than 5% of requests sent over 10 ms late — A trial 1: 12%; ...)'."""
    return (f"The load generator fell behind its schedule in {count} of {total} {unit} (more than "
            f"{BEHIND_SHARE:.0%} of requests sent over {BEHIND_MS:g} ms late — {which})")


def behind_here(share: float) -> str:
    """Return how one measured point says it ran behind, with the consequence."""
    return (f"the load generator fell behind here ({share:.0%} of requests sent over {BEHIND_MS:g} ms late), so the "
            "server saw a smoother, lighter load than asked")
