"""What one step's time reads (StepContext) and one micro-step's time with where it came from (Micro)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.engine.context import ModelFacts
from planner.engine.estimates import ResolvedModel, Source, TimePoint
from planner.engine.measurements import MeasurementIndex
from planner.inputs.folders import Inputs
from planner.inputs.scenario import Hardware, TrainingSetup


@dataclass(frozen=True)
class StepContext:
    """Everything a step time reads besides the option: the inputs, the model's facts, the training set-up, the
    hardware it is timed on (the rental's layout when a rental decides which links are crossed) and the padding
    factor of the workload's rows. step_ladder.step_for is cached by exactly these."""

    inputs: Inputs
    facts: ModelFacts
    training: TrainingSetup
    hardware: Hardware
    time_factor: float = 1.0

    @property
    def model(self) -> ResolvedModel:
        return self.facts.model

    @property
    def idx(self) -> MeasurementIndex:
        return self.facts.idx

    @property
    def trainable(self) -> int:
        return self.facts.trainable


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
