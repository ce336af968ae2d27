"""What one micro-step's time reads (MicroContext) and that time with where it came from (Micro)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.engine import steptime
from planner.engine.context import ModelFacts
from planner.engine.estimates import ResolvedModel, Source, TimePoint
from planner.engine.measurements import MeasurementIndex
from planner.engine.notes import Note
from planner.engine.stack import planned_stack
from planner.inputs.folders import Inputs
from planner.inputs.scenario import TrainingSetup


@dataclass(frozen=True)
class MicroContext:
    """Everything a micro-step's time reads besides the GPU, precision and micro-batch: the inputs, the model's
    facts and the training set-up. Neither the GPU count nor the hardware (links, input workers) nor the padding
    of the workload's rows: those act on the step around it (step_ladder._step)."""

    inputs: Inputs
    facts: ModelFacts
    training: TrainingSetup

    @property
    def model(self) -> ResolvedModel:
        return self.facts.model

    @property
    def idx(self) -> MeasurementIndex:
        return self.facts.idx

    @property
    def trainable(self) -> int:
        return self.facts.trainable

    @property
    def stack(self) -> str:
        """The software stack the plan is made for (the scenario's, else the model family's default)."""
        return planned_stack(self.training.stack, self.model.family).stack

    def optimizer_s(self, bandwidth_gb_per_s: float) -> float:
        """The optimizer step of the trainable parameters at this bandwidth (steptime.optimizer_step_s)."""
        t = self.training
        return steptime.optimizer_step_s(self.trainable, t.optimizer, t.optimizer_impl, bandwidth_gb_per_s)


@dataclass(frozen=True)
class Micro:
    """One micro-step time and whether it already contains an optimizer step (measured and transferred do)."""

    seconds: float
    source: Source
    band: tuple[float, float]
    optimizer_s: float | None
    includes_optimizer: bool
    used: tuple[TimePoint, ...] = ()  # the measured points the figure rests on (own GPU's or transferred)
    band_meaning: str = "assumed"  # "p10-p90" when the band is held-out errors of the path (StepEstimate)
    precision_used: str | None = None  # the points' precision when it is the option's same-speed sibling
    fixed_s: float = 0.0  # the part that does not depend on the tokens in a row (QLoRA's dequantisation)
    # No published or measured run shares the option's model family, stack and architecture group: the range is
    # widened and the plan says so (Note "unlike_corpus"); None when one does.
    unlike: Note | None = None

    def outside_s(self, optimizer_s: float | None = None) -> float:
        """The part that is neither forward nor backward: the optimizer step inside a measured micro-step (never
        more than half of it; `optimizer_s`, else the micro-step's own) and QLoRA's dequantisation."""
        opt = self.optimizer_s if optimizer_s is None else optimizer_s
        return (min(opt or 0.0, 0.5 * self.seconds) if self.includes_optimizer else 0.0) + self.fixed_s
