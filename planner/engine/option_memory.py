"""One option's memory: the largest micro-batch that fits (the search), its memory estimate, the checkpoint size."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from planner.engine import memo, memory, published_memory
from planner.engine.context import model_facts
from planner.engine.estimates import MemoryEstimate
from planner.engine.option import OptionPlan
from planner.inputs.folders import Inputs
from planner.inputs.scenario import ModelSpec, TrainingSetup
from planner.vocab import GIB


@dataclass(frozen=True)
class OptionMemory:
    """What the memory model says of one option: its micro-batch (the scenario's, or the largest that fits), the
    accumulation that makes up the global batch, the memory at that micro-batch and the checkpoint's size."""

    micro_batch: int
    grad_accum: int
    memory: MemoryEstimate
    checkpoint_gib: float


@memo.cached
def option_memory(inputs: Inputs, model: ModelSpec, training: TrainingSetup, *, workspace_gib: float | None,
                  gpu_id: str, n_gpus: int, precision: str, source: str = "<scenario>") -> OptionMemory:
    """The option's memory (OptionMemory). Cached per Inputs by these arguments, which are everything it reads: a
    what-if that changes the workload, pricing or constraints reuses it."""
    facts = model_facts(inputs, model, training, source)
    gpu = inputs.profiles[gpu_id]
    option = OptionPlan(gpu=gpu, n_gpus=n_gpus, precision=precision)
    per_gpu = training.global_batch // n_gpus
    line = facts.activation_line(precision, gpu_id)
    candidates = (training.micro_batch,) if training.micro_batch else _divisors_desc(per_gpu)

    def memory_at(b: int) -> MemoryEstimate:
        est = memory.estimate_memory(facts.model, training, OptionPlan(gpu=gpu, n_gpus=n_gpus, precision=precision,
                                                                       micro_batch=b, grad_accum=per_gpu // b),
                                     line=line, workspace_gib=workspace_gib)
        published = facts.published_memory.get((gpu_id, precision, b)) if n_gpus == 1 else None
        return published_memory.decided_by(est, published) if published else est

    micro, mem = _largest_fitting(candidates, memory_at)
    ckpt = memory.checkpoint_bytes(memory.total_params(facts.model, training), facts.trainable,
                                   optimizer=training.optimizer, state_layout=training.state_layout,
                                   precision=option.precision,
                                   adapter_base_dtype=training.adapter.base_dtype if training.adapter else None,
                                   quantized_params=memory.quantized_base_params(facts.model)) / GIB
    return OptionMemory(micro, per_gpu // micro, mem, ckpt)


@lru_cache(maxsize=256)
def _divisors_desc(n: int) -> tuple[int, ...]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(sorted({*small, *(n // d for d in small)}, reverse=True))


def _largest_fitting(candidates_desc: Sequence[int],
                     memory_at: Callable[[int], MemoryEstimate]) -> tuple[int, MemoryEstimate]:
    """Largest candidate micro-batch whose verdict is "fits" (outside the borderline band), else the largest that
    fits at all (borderline: the recommendation counts it against the option), else the smallest. Memory grows with the batch,
    so each is a binary search; a smaller micro-batch costs only launch overhead and small-matmul efficiency, while
    a 4%-headroom run is one allocator hiccup from an out-of-memory error."""
    def largest(ok: Callable[[MemoryEstimate], bool]) -> tuple[int, MemoryEstimate] | None:
        lo, hi = 0, len(candidates_desc) - 1
        best: tuple[int, MemoryEstimate] | None = None
        while lo <= hi:
            mid = (lo + hi) // 2
            mem = memory_at(candidates_desc[mid])
            if ok(mem):
                best = (candidates_desc[mid], mem)
                hi = mid - 1
            else:
                lo = mid + 1
        return best

    found = largest(lambda m: m.verdict == "fits") or largest(lambda m: bool(m.fits))
    if found is not None:
        return found
    smallest = candidates_desc[-1]
    return smallest, memory_at(smallest)


