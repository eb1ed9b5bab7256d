"""A model's contract with its clients: what a config change breaks for whoever sends requests."""
from __future__ import annotations

from dataclasses import dataclass

from tritonclient.grpc import model_config_pb2 as pb

from app.config.enums import enum_label
from app.config.errors import Problem
from app.config.model_config import ModelConfig
from app.config.batching_fit import model_kind


@dataclass(frozen=True)
class ContractChange:
    """One change clients would notice: a field, what it was and what it becomes."""

    field: str
    before: str
    after: str

    def __str__(self) -> str:
        return f"{self.field}: {self.before} → {self.after}"


def _tensor(t) -> str:
    dtype = enum_label(pb.DataType.DESCRIPTOR, t.data_type)
    text = f"{dtype} {list(t.dims)}"
    if t.HasField("reshape"):
        text += f" reshape {list(t.reshape.shape)}"
    return text + (" optional" if getattr(t, "optional", False) else "")


def _tensors(kind: str, old, new) -> list[ContractChange]:
    before, after = {t.name: t for t in old}, {t.name: t for t in new}
    out = []
    for name in sorted(before.keys() | after.keys()):
        a, b = before.get(name), after.get(name)
        if a is None:
            what = "added" + ("" if getattr(b, "optional", False) else " (required: old clients do not send it)")
            out.append(ContractChange(f"{kind} {name!r}", "absent", f"{what}: {_tensor(b)}"))
        elif b is None:
            out.append(ContractChange(f"{kind} {name!r}", _tensor(a), "removed"))
        elif _tensor(a) != _tensor(b):
            out.append(ContractChange(f"{kind} {name!r}", _tensor(a), _tensor(b)))
    return out


def _controls(config: ModelConfig) -> str:
    if not config.HasField("sequence_batching"):
        return "none"
    parts = []
    for control in config.sequence_batching.control_input:
        for c in control.control:
            kind = enum_label(pb.ModelSequenceBatching.Control.Kind.DESCRIPTOR, c.kind).replace("CONTROL_SEQUENCE_", "")
            values = list(c.int32_false_true or c.fp32_false_true or c.bool_false_true)
            parts.append(f"{control.name}={kind}{values if values else ''}")
    return ", ".join(sorted(parts)) or "none"


def contract_changes(old: ModelConfig, new: ModelConfig) -> list[ContractChange]:
    """Return the changes that clients of the old config would notice (empty when the contract holds)."""
    out = _tensors("input", old.input, new.input) + _tensors("output", old.output, new.output)
    if (old.max_batch_size > 0) != (new.max_batch_size > 0):
        out.append(ContractChange("batching dimension (max_batch_size)",
                                  "requests carry a batch dimension" if old.max_batch_size else "no batch dimension",
                                  "no batch dimension" if not new.max_batch_size else "requests carry a batch dimension"))
    if _controls(old) != _controls(new):
        out.append(ContractChange("sequence control inputs", _controls(old), _controls(new)))
    if old.model_transaction_policy.decoupled != new.model_transaction_policy.decoupled:
        out.append(ContractChange("model_transaction_policy.decoupled", str(old.model_transaction_policy.decoupled),
                                  str(new.model_transaction_policy.decoupled)))
    kinds = lambda c: ", ".join(sorted({enum_label(pb.ModelInstanceGroup.Kind.DESCRIPTOR, g.kind)  # noqa: E731
                                        for g in c.instance_group})) or "default"
    if kinds(old) != kinds(new):
        out.append(ContractChange("instance kinds", kinds(old), kinds(new)))
    for field in ("backend", "platform"):
        if getattr(old, field) != getattr(new, field):
            out.append(ContractChange(field, getattr(old, field) or "—", getattr(new, field) or "—"))
    return out


def unservable(new: ModelConfig) -> list[Problem]:
    """Return what the model's clients could never satisfy under this config (refused, not confirmable)."""
    if model_kind(new) == "stateless" and new.HasField("sequence_batching"):
        return [Problem("sequence_batching", "is set on a stateless model: every request would need a correlation "
                        "ID and sequence flags its clients never send; use dynamic_batching instead")]
    return []
