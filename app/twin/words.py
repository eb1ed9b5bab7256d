"""What a calibration lacks, and how sure the twin is, in words a person can act on."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.twin.calibration import Calibration

FAR = 0.25  # an extrapolated size whose time is this uncertain makes the whole answer 'low'


def spans(sizes: list[int]) -> str:
    """Return sizes as short ranges: [1, 2, 3, 5] -> '1-3, 5'."""
    out, start = [], None
    for i, size in enumerate(sizes):
        start = size if start is None else start
        if i + 1 == len(sizes) or sizes[i + 1] != size + 1:
            out.append(f"{start}" if start == size else f"{start}-{size}")
            start = None
    return ", ".join(out)


def lacks(cal: Calibration, sizes: list[int], instances: int) -> tuple[str, ...]:
    """Return each thing the calibration does not know for these batch sizes and this instance count."""
    costs = [cal.size_cost(b) for b in sizes]
    out = []
    never = [c.size for c in costs if c.source in ("interpolated", "extrapolated")]
    if never:
        out.append(f"batch sizes {spans(never)} never ran: {cal.curve.note}")
    few = [c.size for c in costs if c.source == "few executions"]
    if few:
        out.append(f"batch sizes {spans(few)} ran fewer than {cal.min_executions} times: their means lean on the fit")
    seen = cal.instance_counts
    if instances not in seen:
        out.append(f"{instances} instance{'s' if instances > 1 else ''} never measured (measured: "
                   f"{', '.join(map(str, seen))}): the slowdown comes from the contention model, "
                   f"{cal.contention.note}")
    elif instances > 1 and not cal.contention.measured:
        out.append(f"contention not measured: {cal.contention.note}")
    if instances > 1 and any(w.instances > 1 and not w.seconds for w in cal.windows):
        out.append("window lengths unknown: windows at more than one instance are taken as saturated")
    if cal.cv is None and sizes and all(cal.measured_cv(b) is None for b in sizes):
        out.append(f"spread per execution not measured (it needs two windows with a size): assumed cv "
                   f"{costs[0].cv:.2f}")
    if cal.client_overhead_us is None:
        out.append("client overhead unknown: latencies are the server's alone")
    return tuple(out)


def confidence(cal: Calibration, sizes: list[int], instances: int) -> str:
    """Return 'high', 'medium' or 'low' and the reasons, worst first."""
    costs = [cal.size_cost(b) for b in sizes]
    low, medium = [], []
    if len(cal.curve.sizes) == 1 and any(c.source != "measured" for c in costs):
        low.append("one batch size seen, the others assumed")
    far = [c.size for c in costs if c.source == "extrapolated" and c.uncertainty > FAR]
    if far:
        low.append(f"batch sizes {spans(far)} far beyond the sizes seen")
    if instances > 1 and not cal.contention.measured and cal.prior_share is None:
        low.append("contention between instances assumed")
    near = [c.size for c in costs if c.source in ("interpolated", "few executions", "extrapolated")
            and c.size not in far]
    if near:
        medium.append(f"batch sizes {spans(near)} fitted, not measured")
    if instances not in cal.instance_counts:
        medium.append(f"{instances} instances never measured")
    level = "low" if low else "medium" if medium else "high"
    return f"{level}: " + "; ".join(low + medium or ["every batch size it forms was measured at this instance count"])
