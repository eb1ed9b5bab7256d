"""What one execution costs in the twin: uncontended time per batch size, its spread, and the shared-device part."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Costs:
    """Execution time per batch size (index = size, µs), its coefficient of variation, and contention.

    An execution of a batch of b, of mean t, runs (1 - share[b])·t + io_us[b] on its own instance and share[b]·t on
    one device that all instances take turns on (first come, first served): the lab's gpu_sim holds a lock around
    its compute, and a CPU model on C cores behaves alike with share = 1/C. io_us (compute_input + compute_output,
    the backend's reading and writing of tensors) and share are per batch size; one number stands for every size.
    """

    mean_us: tuple[float, ...]
    cv: tuple[float, ...] = ()
    io_us: tuple[float, ...] | float = 0.0
    share: tuple[float, ...] | float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean_us", tuple(float(m) for m in self.mean_us))
        io = self.io_us
        io = (0.0, *(float(io),) * (len(self.mean_us) - 1)) if isinstance(io, (int, float)) else tuple(map(float, io))
        if len(io) != len(self.mean_us):
            raise ValueError("io_us needs one entry per batch size, like mean_us (or one number for all)")
        object.__setattr__(self, "io_us", io)
        cv = tuple(float(c) for c in self.cv) or (0.0,) * len(self.mean_us)
        object.__setattr__(self, "cv", cv)
        if len(self.cv) != len(self.mean_us):
            raise ValueError("cv needs one entry per batch size, like mean_us")
        share = self.share
        share = (0.0, *(float(share),) * (len(self.mean_us) - 1)) if isinstance(share, (int, float)) else \
            tuple(map(float, share))
        if len(share) != len(self.mean_us):
            raise ValueError("share needs one entry per batch size, like mean_us (or one number for all)")
        if not all(0.0 <= x <= 1.0 for x in share):
            raise ValueError(f"share is {self.share}; the device part of an execution lies between 0 and 1")
        object.__setattr__(self, "share", share)

    @classmethod
    def table(cls, cost_us: Callable[[int], float], max_batch: int, cv: float = 0.0, io_us: float = 0.0,
              share: float = 0.0) -> Costs:
        """Build from a function of the batch size (sizes 1..max_batch)."""
        sizes = range(max(1, max_batch) + 1)
        return cls(tuple(0.0 if b == 0 else cost_us(b) for b in sizes), (cv,) * len(sizes), io_us, share)

    @property
    def shared(self) -> bool:
        """Return whether executions take turns on a shared device at all."""
        return any(self.share)

    @property
    def max_batch(self) -> int:
        """Return the largest batch size the table covers."""
        return len(self.mean_us) - 1

    def service_us(self, size: int) -> float:
        """Return the mean time one instance is busy with a batch of this size, without contention."""
        return self.mean_us[size] + self.io_us[size]

    def scaled(self, factor: float, share: float | None = None) -> Costs:
        """Return the table with every time multiplied by factor (and another share when given)."""
        return replace(self, mean_us=tuple(m * factor for m in self.mean_us), io_us=tuple(i * factor for i in self.io_us),
                       share=self.share if share is None else share)

    def sigmas(self) -> tuple[float, ...]:
        """Return the lognormal sigma per size that gives each size's cv."""
        return tuple(math.sqrt(math.log1p(c * c)) for c in self.cv)
