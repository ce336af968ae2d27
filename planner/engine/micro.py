"""What one micro-step's time reads (MicroContext); the time itself with where it came from is estimates.Micro."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.engine import steptime
from planner.engine.context import ModelFacts
from planner.engine.estimates import ResolvedModel, Source, TimePoint
from planner.engine.measurements import MeasurementIndex
from planner.engine.notes import Note
from planner.engine.stack import planned_stack
from planner.inputs.folders import Inputs
from planner.inputs.scenario import TrainingSetup


@dataclass(frozen=True)
class TransferSource:
    """What a transfer reads of one source GPU's own figure at one precision and micro-batch, whatever the target
    GPU: its forward + backward (at the reference source's level), the optimizer step inside it, the unscaled host
    part and what the figure rests on. Kept per context (micro.Kept): a plan moves each source's figure to every
    other GPU (issue 38)."""

    peak_tflops: float
    fwd_bwd_s: float
    optimizer_s: float
    t0_s: float
    source: Source  # how its own time was obtained
    used: tuple[TimePoint, ...]
    aligned: Note | None


@dataclass(frozen=True, eq=False)
class Kept:
    """Answers that read only what a MicroContext holds, worked out once per model and training set-up (the step
    ladder shares one between the contexts of a plan) rather than once per option and per GPU a time is moved from
    (issue 38): step_formula.launch_floor per precision; step_transfer's source side of a transfer per (source GPU,
    precision, micro-batch), and the GPUs with times per precision."""

    launch_floors: dict[str, tuple[float, Note]] = field(default_factory=dict)
    transfer_sources: dict[tuple[str, str, int], TransferSource | None] = field(default_factory=dict)
    transfer_gpus: dict[str, tuple[tuple[str, bool], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class MicroContext:
    """Everything a micro-step's time reads besides the GPU, precision and micro-batch: the inputs, the model's
    facts and the training set-up. Neither the GPU count nor the hardware (links, input workers) nor the padding
    of the workload's rows: those act on the step around it (step_ladder._step)."""

    inputs: Inputs
    facts: ModelFacts
    training: TrainingSetup
    # what is worked out once per context and read for every option (issue 38); not part of its identity
    kept: Kept = field(default_factory=lambda: Kept(), compare=False, repr=False)

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
