"""What the GPUs say: Triton's nv_gpu_* gauges per GPU, memory per model instance, and whether one more fits.

Triton exports these only on a GPU server (DCGM): utilization 0..1, memory used and total in bytes, power
usage and limit in watts, each labelled gpu_uuid. A CPU server exports none, and the GPU panels stay hidden.
"""
from __future__ import annotations

from dataclasses import dataclass

from app.metrics.exposition import samples

FAMILIES = {
    "nv_gpu_utilization": "utilization",
    "nv_gpu_memory_used_bytes": "memory_used",
    "nv_gpu_memory_total_bytes": "memory_total",
    "nv_gpu_power_usage": "power_w",
    "nv_gpu_power_limit": "power_limit_w",
}


@dataclass(frozen=True)
class Gpu:
    """One GPU as the server reports it (None: that gauge is not exported)."""

    uuid: str
    utilization: float | None = None
    memory_used: float | None = None
    memory_total: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None

    @property
    def memory_free(self) -> float | None:
        if self.memory_used is None or self.memory_total is None:
            return None
        return self.memory_total - self.memory_used


def gpus_of(text: str) -> list[Gpu]:
    """Return every GPU in a /metrics text, in the server's order (empty on a CPU server)."""
    values: dict[str, dict] = {}
    for name, labels, value in samples(text, FAMILIES.__contains__):
        values.setdefault(labels.get("gpu_uuid", ""), {})[FAMILIES[name]] = value
    return [Gpu(uuid, **fields) for uuid, fields in values.items()]


def memory_per_instance(seen: dict[int, float]) -> float | None:
    """Return the GPU memory one more instance takes: the least-squares slope of memory used over instance
    counts seen (count -> bytes); None until two different counts were seen."""
    if len(seen) < 2:
        return None
    xs, ys = list(seen), list(seen.values())
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var


def next_instance_fits(gpus: list[Gpu], per_instance: float | None, devices: tuple[int, ...] = ()) -> str | None:
    """Return a warning when one more instance would not fit in the free memory of the GPUs it may use
    (the listed device indexes, else all); None when it fits or nothing is known yet."""
    if per_instance is None or per_instance <= 0 or not gpus:
        return None
    usable = [g for i, g in enumerate(gpus) if not devices or i in devices]
    free = [g.memory_free for g in usable if g.memory_free is not None]
    if not free or max(free) >= per_instance:
        return None
    return (f"one more instance needs about {per_instance / 2**30:.2f} GiB of GPU memory, but the most free on "
            f"{'the listed GPUs' if devices else 'any GPU'} is {max(free) / 2**30:.2f} GiB: it would not load")


@dataclass(frozen=True)
class GpuView:
    """The GPUs a server reports, and what one instance of a model takes on them."""

    gpus: tuple[Gpu, ...]
    instances: int  # the model's instances now
    counts_seen: tuple[int, ...]  # the instance counts its memory was seen at, sorted
    per_instance: float | None  # bytes one more instance takes (None until two counts were seen)
    warning: str | None  # one more instance would not fit (None: it fits, or nothing is known yet)

    @property
    def used(self) -> float:
        """Return the memory used on every GPU, in bytes."""
        return sum(g.memory_used or 0.0 for g in self.gpus)


class GpuMemory:
    """The GPU memory used at each instance count of each model, learnt as the counts change (the GPU panel's and
    the autopilot's one source: memory settles once the instances are loaded, so a reload's readings are left out)."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[int, float]] = {}

    def view(self, model: str, gpus: list[Gpu], instances: int, devices: tuple[int, ...] = (),
             settled: bool = True) -> GpuView:
        """Note the memory used now at this count (when settled) and return the model's view."""
        seen = self._seen.setdefault(model, {})
        if settled:
            seen[instances] = sum(g.memory_used or 0.0 for g in gpus)
        per = memory_per_instance(seen)
        return GpuView(tuple(gpus), instances, tuple(sorted(seen)), per, next_instance_fits(gpus, per, devices))
