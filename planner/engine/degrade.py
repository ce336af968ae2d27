"""Degrade, never refuse (issue 33): when an option does not fit as the scenario gives it, the cheapest change in
step time that makes it fit — a smaller micro-batch, activation checkpointing, a deeper ZeRO/FSDP stage, 8-bit
optimizer states, or a combination — planned in its place, with the change named (docs/methods.md#degrade).
Offload to CPU is not among them: its step time is not modelled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from itertools import product

from planner.engine.estimates import PlannedWith
from planner.engine.option_memory import OptionMemory, option_memory
from planner.inputs.folders import Inputs
from planner.inputs.scenario import Hardware, ModelSpec, TrainingSetup
from planner.vocab import SHARDINGS

# planned_with's `step_time_s`: (setup, micro-batch, accumulation) -> seconds per optimizer step.
StepTimer = Callable[[TrainingSetup, int, int], float]
# The fields a degraded plan may change, in the order a headline names them (plan/2 `planned_with`).
CHANGEABLE = PlannedWith.CHANGEABLE
# Optimizers with an 8-bit-state variant (bitsandbytes' Adam8bit/AdamW8bit: Dettmers et al. 2022, "8-bit
# Optimizers via Block-wise Quantization"), which vocab.OPTIMIZERS names adam8bit.
EIGHT_BIT_OF = {"adam": "adam8bit", "adamw": "adam8bit"}
# The ZeRO stages each state layout runs (memory._check_sharding): deeper stages shard more of the states.
_STAGES_OF_LAYOUT = {"deepspeed": ("zero2", "zero3"), "megatron": ("none", "zero1")}


def state_bits(optimizer: str) -> int:
    """Bits per optimizer state value: 8 for the 8-bit optimizers, else 32."""
    return 8 if optimizer == "adam8bit" else 32


def deeper_stages(training: TrainingSetup, n_gpus: int) -> tuple[str, ...]:
    """The scenario's ZeRO stage and the deeper ones its layout runs; only its own on one GPU (nothing to shard)."""
    if n_gpus <= 1:
        return (training.sharding,)
    stages = _STAGES_OF_LAYOUT.get(training.state_layout, SHARDINGS)
    here = SHARDINGS.index(training.sharding)
    return (training.sharding, *(s for s in stages if SHARDINGS.index(s) > here))


def variants(training: TrainingSetup, n_gpus: int) -> Iterator[tuple[TrainingSetup, tuple[str, ...]]]:
    """Every setup one or more CHANGEABLE fields away from `training`, with the names of those fields. A fixed
    micro-batch may become "auto" (the largest that fits); checkpointing only turns on; the stage only deepens;
    Adam/AdamW may keep 8-bit states."""
    micros = (training.micro_batch, None) if training.micro_batch else (None,)
    ckpts = (training.activation_checkpointing,) + (() if training.activation_checkpointing else (True,))
    optimizers = (training.optimizer,) + ((EIGHT_BIT_OF[training.optimizer],) if training.optimizer in EIGHT_BIT_OF
                                          else ())
    for micro, ckpt, sharding, optimizer in product(micros, ckpts, deeper_stages(training, n_gpus), optimizers):
        changed = tuple(name for name, differs in zip(CHANGEABLE, (
            micro != training.micro_batch, ckpt != training.activation_checkpointing,
            sharding != training.sharding, optimizer != training.optimizer), strict=True) if differs)
        if changed:
            yield replace(training, micro_batch=micro, activation_checkpointing=ckpt, sharding=sharding,
                          optimizer=optimizer), changed


def planned_with(inputs: Inputs, model: ModelSpec, training: TrainingSetup, hardware: Hardware, *, gpu_id: str,
                 n_gpus: int, precision: str, step_time_s: StepTimer, source: str = "<scenario>") -> PlannedWith | None:
    """The variant that fits (`fits` True) with the least step time at the scenario's global batch. Changes that
    leave the training's arithmetic as it was (micro-batch with accumulation, checkpointing, sharding) come before
    8-bit optimizer states, which change the optimizer's numerics; then a verdict of "fits" before a borderline one,
    then the step time (`step_time_s(setup, micro, accum)`), then the fewest changes. None when no variant fits."""
    best: tuple[tuple[bool, bool, float, int], PlannedWith] | None = None
    for setup, changed in variants(training, n_gpus):
        fit: OptionMemory = option_memory(inputs, model, setup, workspace_gib=hardware.workspace_gib, gpu_id=gpu_id,
                                          n_gpus=n_gpus, precision=precision, source=source)
        if not fit.memory.fits:
            continue
        if fit.micro_batch == training.micro_batch and "micro_batch" in changed:
            changed = tuple(c for c in changed if c != "micro_batch")  # "auto" found the scenario's own
            if not changed:
                continue
        key = ("optimizer_state_bits" in changed, fit.memory.verdict != "fits",
               step_time_s(setup, fit.micro_batch, fit.grad_accum), len(changed))
        if best is None or key < best[0]:
            best = (key, PlannedWith(micro_batch=fit.micro_batch, grad_accum=fit.grad_accum,
                                     activation_checkpointing=setup.activation_checkpointing, sharding=setup.sharding,
                                     optimizer_state_bits=state_bits(setup.optimizer), changed=changed,
                                     memory=fit.memory, checkpoint_gib=fit.checkpoint_gib,
                                     training=replace(setup, micro_batch=fit.micro_batch)))
    return None if best is None else best[1]
