"""One plan option as the engine's input: a GPU type × count × precision at a micro-batch and accumulation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type name only: the engine's formula modules stay standard-library only at run time
    from planner.inputs.profiles import GpuProfile


@dataclass(frozen=True)
class OptionPlan:
    """Where and at what batch one option runs; the scenario's TrainingSetup says how (optimizer, sharding,
    state layout, checkpointing), so the two together fix every memory, time and cost figure of the option."""

    gpu: GpuProfile
    n_gpus: int
    precision: str
    micro_batch: int = 1
    grad_accum: int = 1

    @property
    def id(self) -> str:
        """Stable option id, e.g. 'h100-sxm-80gb-x8-bf16' (DESIGN.md: plan JSON)."""
        return f"{self.gpu.id}-x{self.n_gpus}-{self.precision}"
