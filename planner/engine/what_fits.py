"""What fits, as an answer (issue 33; docs/methods.md#what-fits): per GPU, the largest micro-batch and the longest
sequence that fit, the fewest GPUs that fit a full fine-tune, and which of CPU offload, 8-bit optimizer states or
QLoRA would make a configuration fit that does not.

Every answer is the memory model's (planner.engine.memory.estimate_memory) at the GPU's capacity with the verdict's
meaning of "fits" (device total ≤ capacity); a borderline answer is still an answer, and its band is the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from planner.engine import memo, memory
from planner.engine.context import model_facts
from planner.engine.estimates import ActivationLine, MemoryEstimate, ResolvedModel
from planner.engine.option import OptionPlan
from planner.inputs.errors import CannotEstimate
from planner.inputs.folders import Inputs
from planner.inputs.profiles import GpuProfile
from planner.inputs.scenario import Adapter, ModelSpec, TrainingSetup
from planner.vocab import SHARDINGS

# The sequence search: from SEQ_MIN tokens up to the model's own length × SEQ_REACH (a model's trained context is
# not in its shape; 32× the scenario's covers 4k → 128k), in steps of SEQ_STEP tokens (the granularity FlashAttention
# and packed loaders pad to).
SEQ_MIN, SEQ_STEP, SEQ_REACH, SEQ_MAX = 128, 128, 32, 1 << 20
MICRO_MAX = 1 << 16
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# What each alternative changes (ALTERNATIVES order): optimizer states kept in CPU memory (ZeRO-Offload: "offloads
# the optimizer states and the optimizer computation to CPU", Ren et al. 2021, §4), bitsandbytes 8-bit Adam states
# (Dettmers et al. 2022), and QLoRA (a 4-bit NormalFloat base with rank-16 adapters on every linear layer,
# Dettmers et al. 2023).
ALTERNATIVES = ("offload", "optimizer_8bit", "qlora")


@dataclass(frozen=True)
class WhatFits:
    """The answers for one GPU at one precision (None: nothing in the searched range fits, or not asked)."""

    gpu_id: str
    gpu_name: str
    precision: str
    capacity_gib: float
    n_gpus: int  # the scenario's largest GPU count: the micro-batch, sequence and alternatives are per GPU at it
    largest_micro_batch: int | None  # the scenario's setup at n_gpus
    longest_seq: int | None  # micro-batch 1, no checkpointing; None also for models without a sequence
    longest_seq_checkpointed: int | None  # micro-batch 1, activation checkpointing
    seq_searched: tuple[int, int] | None  # (low, high) tokens; None: not a transformer
    fewest_gpus_full: int | None  # a full fine-tune (no adapter) under the deepest ZeRO stage, micro-batch 1
    gpus_searched: int  # the largest count tried
    fits_at_micro_1: bool  # the scenario's setup at micro-batch 1 on n_gpus
    would_fit_with: tuple[str, ...]  # ALTERNATIVES that make micro-batch 1 fit on n_gpus when it does not


def _largest(ok: Callable[[int], bool], low: int, high: int) -> int | None:
    """The largest n in [low, high] with ok(n), ok monotone (true then false); None when ok(low) is false."""
    if high < low or not ok(low):
        return None
    lo, hi = low, high
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _fits(est: MemoryEstimate) -> bool:
    return est.total <= est.usable and est.activations_known


def _estimate(model: ResolvedModel, training: TrainingSetup, gpu: GpuProfile, *, precision: str, micro: int,
              n_gpus: int = 1, line: ActivationLine | None = None) -> MemoryEstimate:
    return memory.estimate_memory(model, training, OptionPlan(gpu=gpu, n_gpus=n_gpus, precision=precision,
                                                              micro_batch=micro, grad_accum=1), line=line)


def deepest_stage(training: TrainingSetup) -> str:
    """The deepest ZeRO stage the state layout runs (memory._check_sharding)."""
    allowed = {"deepspeed": ("zero2", "zero3"), "megatron": ("none", "zero1")}.get(training.state_layout, SHARDINGS)
    return allowed[-1]


@memo.cached
def what_fits(inputs: Inputs, model: ModelSpec, training: TrainingSetup, *, gpu_id: str, precision: str,
              n_gpus: int = 1, source: str = "<scenario>") -> WhatFits:
    """The answers for one GPU (WhatFits). Cached per Inputs by these arguments."""
    facts = model_facts(inputs, model, training, source)
    resolved, gpu = facts.model, inputs.profiles[gpu_id]
    line = facts.activation_line(precision, gpu_id)

    def fits(m: ResolvedModel, t: TrainingSetup, micro: int, *, n: int = n_gpus, with_line: bool = True) -> bool:
        try:
            return _fits(_estimate(m, t, gpu, precision=precision, micro=micro, n_gpus=n,
                                   line=line if with_line else None))
        except CannotEstimate:
            return False

    # On one GPU there is nothing to shard over: the scenario's stage is then "none".
    single = replace(training, sharding="none") if n_gpus == 1 and training.sharding != "none" else training
    largest_micro = _largest(lambda b: fits(resolved, single, b), 1, MICRO_MAX)
    longest = longest_ckpt = None
    searched = None
    shape = resolved.transformer
    if shape is not None and resolved.seq_len:
        high = min(SEQ_MAX, max(SEQ_MIN, int(resolved.seq_len) * SEQ_REACH))
        searched = (SEQ_MIN, high // SEQ_STEP * SEQ_STEP)

        def at_seq(ckpt: bool) -> int | None:
            t = replace(single, activation_checkpointing=ckpt)
            k = _largest(lambda k: fits(replace(resolved, seq_len=k * SEQ_STEP,
                                                transformer=replace(shape, seq_len=k * SEQ_STEP)),
                                        t, 1, with_line=False), SEQ_MIN // SEQ_STEP, high // SEQ_STEP)
            return None if k is None else k * SEQ_STEP

        longest, longest_ckpt = at_seq(False), at_seq(True)
    full = replace(training, adapter=None, frozen_fraction=0.0, activation_checkpointing=True,
                   sharding=deepest_stage(training))
    # A line measured with adapters does not say a full fine-tune's activations: the formula then.
    fewest = next((n for n in GPU_COUNTS if fits(resolved, full if n > 1 else replace(full, sharding="none"), 1,
                                                  n=n, with_line=training.adapter is None)), None)
    at_one = fits(resolved, single, 1)
    alternatives: tuple[str, ...] = ()
    if not at_one:
        alternatives = tuple(a for a in ALTERNATIVES if _alternative_fits(a, resolved, single, gpu, precision=precision,
                                                                          n_gpus=n_gpus, line=line))
    return WhatFits(gpu_id=gpu_id, gpu_name=gpu.name, precision=precision, capacity_gib=gpu.memory_gib, n_gpus=n_gpus,
                    largest_micro_batch=largest_micro, longest_seq=longest, longest_seq_checkpointed=longest_ckpt,
                    seq_searched=searched, fewest_gpus_full=fewest, gpus_searched=GPU_COUNTS[-1],
                    fits_at_micro_1=at_one, would_fit_with=alternatives)


def _alternative_fits(alternative: str, model: ResolvedModel, training: TrainingSetup, gpu: GpuProfile, *,
                      precision: str, n_gpus: int, line: ActivationLine | None) -> bool:
    """Whether one ALTERNATIVES change alone makes micro-batch 1 fit on n_gpus."""
    try:
        if alternative == "offload":
            est = _estimate(model, training, gpu, precision=precision, micro=1, n_gpus=n_gpus, line=line)
            return est.activations_known and est.total - est.optimizer <= est.usable
        if alternative == "optimizer_8bit":
            if training.optimizer not in ("adam", "adamw") or training.adapter is not None:
                return False
            return _fits(_estimate(model, replace(training, optimizer="adam8bit"), gpu, precision=precision,
                                   micro=1, n_gpus=n_gpus, line=line))
        if model.transformer is None or (training.adapter is not None and training.adapter.kind == "qlora"):
            return False
        qlora = replace(training, adapter=Adapter(kind="qlora", rank=16, targets="all_linear", base_dtype="nf4"),
                        frozen_fraction=0.0)
        return _fits(_estimate(model, qlora, gpu, precision=precision, micro=1, n_gpus=n_gpus))
    except CannotEstimate:
        return False


def what_fits_all(inputs: Inputs, model: ModelSpec, training: TrainingSetup, gpu_ids: Sequence[str], *,
                  counts: Sequence[int] = (1,), prefer: str | None = None,
                  source: str = "<scenario>") -> tuple[WhatFits, ...]:
    """what_fits for each GPU at `prefer` (the recommended option's precision) where the GPU supports it, else the
    first of the scenario's precisions it supports (GPUs supporting none: left out), and the scenario's largest GPU
    count; largest capacity first."""
    out, n_gpus = [], max(counts)
    order = ((prefer,) if prefer in training.precisions else ()) + training.precisions
    for gpu_id in gpu_ids:
        gpu = inputs.profiles[gpu_id]
        precision = next((p for p in order if p is not None and gpu.supports(p)), None)
        if precision is not None:
            out.append(what_fits(inputs, model, training, gpu_id=gpu_id, precision=precision, n_gpus=n_gpus,
                                 source=source))
    return tuple(sorted(out, key=lambda w: (-w.capacity_gib, w.gpu_name)))
