"""Ensembles: which models an ensemble runs, and what a change to one of them breaks in the ensembles using it."""
from __future__ import annotations

from tritonclient.grpc import model_config_pb2 as pb

from app.config.errors import Problem
from app.config.model_config import ModelConfig


def is_ensemble(config: ModelConfig) -> bool:
    """Return True for an ensemble (platform "ensemble", steps in ensemble_scheduling)."""
    return config.platform == "ensemble" or config.HasField("ensemble_scheduling")


def steps_of(config: ModelConfig) -> list[str]:
    """Return the composing models of an ensemble in step order (each once)."""
    out: list[str] = []
    for step in config.ensemble_scheduling.step:
        if step.model_name not in out:
            out.append(step.model_name)
    return out


def tuned_at_its_steps(model: str, config: ModelConfig) -> str:
    """Return why a model's instances, batching and queue cannot be set on it, or '' when they can: an ensemble
    has none of its own (Triton refuses an instance_group on one) — each request queues, is batched and runs at
    each of its steps, on that step's instances. The one sentence the pages, the twin and the autopilot give."""
    if not is_ensemble(config):
        return ""
    return (f"{model} is an ensemble: each request runs {' → '.join(steps_of(config)) or 'its steps'}, and each "
            "step queues, batches and runs on its own instances — the ensemble has no instances, batcher or queue "
            "of its own: tune a step instead")


def ensembles_using(model: str, configs: dict[str, ModelConfig]) -> list[str]:
    """Return the ensembles (of name -> served config) that run `model` in one of their steps."""
    return sorted(name for name, config in configs.items() if is_ensemble(config) and model in steps_of(config))


def _dtype(value: int) -> str:
    return pb.DataType.Name(value) if value in pb.DataType.values() else str(value)


def _fits(dims_a, dims_b) -> bool:
    """Return True when two dims lists can describe the same tensor (-1 matches any size)."""
    return len(dims_a) == len(dims_b) and all(a == b or a == -1 or b == -1 for a, b in zip(dims_a, dims_b))


def step_breaks(model: str, new: ModelConfig, ensemble: str, config: ModelConfig,
                others: dict[str, ModelConfig]) -> list[Problem]:
    """Return what `new` (the next config of `model`) breaks in `ensemble` (its served `config`); others: the served
    configs of the ensemble's other steps, to check the tensors passed between steps."""
    problems: list[Problem] = []
    inputs = {t.name: t for t in new.input}
    outputs = {t.name: t for t in new.output}
    ens_in = {t.name: t for t in config.input}
    producers: dict[str, tuple[str, object]] = {}  # ensemble tensor -> (step model, its output) that writes it
    for step in config.ensemble_scheduling.step:
        step_outputs = outputs if step.model_name == model else {t.name: t for t in others.get(step.model_name, ModelConfig()).output}
        for key, tensor in step.output_map.items():
            if key in step_outputs:
                producers[tensor] = (step.model_name, step_outputs[key])
    where = f"ensemble {ensemble!r}"
    for i, step in enumerate(config.ensemble_scheduling.step):
        if step.model_name != model:
            continue
        for key, tensor in sorted(step.input_map.items()):
            mine = inputs.get(key)
            if mine is None:
                problems.append(Problem(f"input {key!r}", f"is gone, but {where} step {i + 1} feeds its tensor "
                                        f"{tensor!r} into it; keep the input or change the ensemble first"))
                continue
            source = ens_in.get(tensor)
            fed = (source.data_type, list(source.dims)) if source is not None else None
            if source is None and tensor in producers and producers[tensor][0] != model:
                out = producers[tensor][1]
                fed = (out.data_type, list(out.dims))
            if fed is not None and fed[0] != mine.data_type:
                problems.append(Problem(f"input {key!r}", f"takes {_dtype(mine.data_type)}, but {where} step {i + 1} "
                                        f"feeds it {tensor!r} as {_dtype(fed[0])}"))
            elif fed is not None and not _fits(fed[1], list(mine.dims)):
                problems.append(Problem(f"input {key!r}", f"has dims {list(mine.dims)}, but {where} step {i + 1} "
                                        f"feeds it {tensor!r} with dims {fed[1]}"))
        for key, tensor in sorted(step.output_map.items()):
            if key not in outputs:
                problems.append(Problem(f"output {key!r}", f"is gone, but {where} step {i + 1} reads it as "
                                        f"{tensor!r}; keep the output or change the ensemble first"))
    ens_out = {t.name: t for t in config.output}
    for i, step in enumerate(config.ensemble_scheduling.step):  # where what the model writes is read
        readers = [] if step.model_name == model else [
            (f"{where} step {i + 1} ({step.model_name!r}) input {key!r}", tensor,
             {t.name: t for t in others.get(step.model_name, ModelConfig()).input}.get(key))
            for key, tensor in step.input_map.items()]
        for what, tensor, reader in readers:
            produced = producers.get(tensor)
            if reader is None or produced is None or produced[0] != model:
                continue
            out = produced[1]
            if out.data_type != reader.data_type or not _fits(list(out.dims), list(reader.dims)):
                problems.append(Problem(f"output {out.name!r}", f"would be {_dtype(out.data_type)} {list(out.dims)}, "
                                        f"but {what} takes {_dtype(reader.data_type)} {list(reader.dims)}"))
    for tensor, (writer, out) in sorted(producers.items()):
        declared = ens_out.get(tensor)
        if writer == model and declared is not None and (
                out.data_type != declared.data_type or not _fits(list(out.dims), list(declared.dims))):
            problems.append(Problem(f"output {out.name!r}", f"would be {_dtype(out.data_type)} {list(out.dims)}, but "
                                    f"{where} returns it as {tensor!r}: {_dtype(declared.data_type)} "
                                    f"{list(declared.dims)}"))
    if config.max_batch_size > 0 and new.max_batch_size < config.max_batch_size:
        problems.append(Problem("max_batch_size", f"is {new.max_batch_size}, but {where} sends batches of up to "
                                f"{config.max_batch_size} rows to it; keep it at {config.max_batch_size} or more, or "
                                "lower the ensemble's max_batch_size first"))
    return problems
