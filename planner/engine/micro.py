"""What one micro-step's time reads (MicroContext); the time itself with where it came from is estimates.Micro."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.engine import steptime
from planner.engine.context import ModelFacts
from planner.engine.estimates import ResolvedModel
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
    # step_formula.launch_floor per precision: it reads only what this context holds, and a plan asks for it in
    # every transfer and formula time (issue 38); not part of the context's identity
    launch_floors: dict[str, tuple[float, Note]] = field(default_factory=dict, compare=False, repr=False)

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
