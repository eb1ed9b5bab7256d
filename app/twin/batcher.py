"""What the twin needs of a served config: instances, batch limits, delay, priority levels and queue policies."""
from __future__ import annotations

import math
from dataclasses import dataclass

from app.config.ensembles import tuned_at_its_steps
from app.config.model_config import ModelConfig
from app.config.read import settings_of
from app.config.settings import ModelSettings, TimeoutAction


@dataclass(frozen=True)
class Policy:
    """One priority level's queue policy in seconds (0 = no timeout, no bound)."""

    timeout_s: float = 0.0
    reject: bool = True  # timeout_action REJECT; False = DELAY (moved behind the level's fresh requests)
    max_queue_size: int = 0


@dataclass(frozen=True)
class Batcher:
    """The scheduler of one model as the twin simulates it."""

    instances: int = 1
    max_batch: int = 1  # 1: every request alone
    preferred: tuple[int, ...] = (1,)
    delay_s: float = 0.0
    levels: int = 1  # priority levels; level 1 is served first
    default_level: int = 1
    policies: tuple[Policy, ...] = (Policy(),)  # one per level, index 0 = level 1
    batching: bool = False  # False: no dynamic batcher, every request is queued for the instances as it comes
    prefetch: bool = True  # Triton forms up to 2 batches per instance ahead unless priorities or policies are set

    def __post_init__(self) -> None:
        if self.instances < 1 or self.max_batch < 1 or not self.preferred or len(self.policies) != self.levels:
            raise ValueError(f"{self}: needs an instance, max_batch >= 1, a preferred size and a policy per level")
        object.__setattr__(self, "preferred", tuple(sorted(self.preferred)))

    @property
    def slots(self) -> float:
        """Return how many formed batches may wait for an instance (0: a batch forms only for an idle one)."""
        if not self.batching:
            return math.inf
        return 2 * self.instances if self.prefetch else 0

    @property
    def max_preferred(self) -> int:
        """Return the largest preferred batch size."""
        return self.preferred[-1]

    def level_of(self, priority: int) -> int:
        """Return the queue level (1-based) a request of this priority joins; 0 or out of range = the default."""
        return priority if 1 <= priority <= self.levels else self.default_level


def instance_count(settings: ModelSettings) -> int:
    """Return how many instances serve the model (Triton's default is one)."""
    return max(1, sum(group.count for group in settings.instance_groups)) if settings.instance_groups else 1


def _policy(policy) -> Policy:
    if policy is None:
        return Policy()
    return Policy(timeout_s=policy.default_timeout_microseconds / 1e6,
                  reject=policy.timeout_action == TimeoutAction.REJECT, max_queue_size=policy.max_queue_size)


class Unsupported(ValueError):
    """A config the twin does not model; the message says what it lacks."""


def unmodelled(model: str, config: ModelConfig) -> str:
    """Return why the twin cannot answer for a model serving this config, '' when it can: an ensemble (its
    requests queue at each step, each with its own batcher and instances) or sequence batching. The one sentence
    the what-if, the predict command and a twin-ranked sweep give."""
    steps = tuned_at_its_steps(model, config)
    if steps:
        return f"the twin models one model's queue, batcher and instances; {steps}"
    try:
        batcher_of(settings_of(config))
    except Unsupported as exc:
        return str(exc)
    return ""


def batcher_of(settings: ModelSettings) -> Batcher:
    """Return the twin's view of a model's settings (served values, as app.config.read.settings_of gives them)."""
    if settings.sequence_batching is not None:
        raise Unsupported("the twin models the dynamic batcher; this model uses sequence batching (stateful "
                          "sequences pinned to slots), which it does not simulate")
    instances = instance_count(settings)
    db = settings.dynamic_batching
    if db is None or settings.max_batch_size <= 0:
        # Without the dynamic batcher every request is its own execution, in arrival order, queued without bound.
        return Batcher(instances=instances)
    max_batch = settings.max_batch_size
    # Triton fills an empty preferred list with max_batch_size; sizes above it could never be formed.
    preferred = tuple(sorted({s for s in db.preferred_batch_sizes if 0 < s <= max_batch})) or (max_batch,)
    levels = max(1, db.priority_levels)
    # Without priority levels Triton keeps one queue under the default policy and ignores per-level policies.
    given = dict(db.priority_queue_policies) if db.priority_levels else {}
    policies = tuple(_policy(given.get(level, db.default_queue_policy)) for level in range(1, levels + 1))
    default_level = db.default_priority_level if 1 <= db.default_priority_level <= levels else 1
    # Triton's queue prefetches only without priority levels and with a default policy that never acts.
    default = db.default_queue_policy
    quiet = default is None or not (default.default_timeout_microseconds or default.allow_timeout_override
                                    or default.max_queue_size)
    return Batcher(instances=instances, max_batch=max_batch, preferred=preferred,
                   delay_s=db.max_queue_delay_microseconds / 1e6, levels=levels, default_level=default_level,
                   policies=policies, batching=True, prefetch=db.priority_levels == 0 and quiet)
