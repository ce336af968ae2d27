"""Plan against actual: a recorded run's error per figure (actual / predicted - 1) and whether it fell in the range."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner.engine.estimates import Plan
from planner.inputs.actuals import FIGURES, ActualFigures, Predicted, RecordedRun, RunModel, RunOption
from planner.inputs.errors import InputError


@dataclass(frozen=True)
class FigureError:
    """One figure of a recorded run against its prediction."""

    figure: str  # step_time_s | hours | cost_usd
    predicted: float | None
    actual: float
    error: float | None  # actual / predicted - 1 (+0.25: the run took 25% more); None without a prediction
    low: float | None = None  # the predicted range, when the plan gave one
    high: float | None = None

    @property
    def inside(self) -> bool | None:
        """The actual lies within the predicted range (ends included); None without a range."""
        return within(self.actual, (self.low, self.high) if self.low is not None and self.high is not None else None)


def relative_error(actual: float, predicted: float | None) -> float | None:
    """actual / predicted - 1; None when there is no positive finite prediction to compare with."""
    if predicted is None or not math.isfinite(predicted) or predicted <= 0 or not math.isfinite(actual):
        return None
    return actual / predicted - 1.0


def within(actual: float, band: Sequence[float] | None) -> bool | None:
    if band is None:
        return None
    low, high = band
    return low <= actual <= high


def run_errors(run: RecordedRun) -> tuple[FigureError, ...]:
    """The error of every figure the run recorded, in FIGURES order (step time, hours, cost)."""
    out = []
    for figure in FIGURES:
        actual = run.actual.get(figure)
        if actual is None:
            continue
        predicted = run.predicted.get(figure)
        band = run.predicted.range_of(figure)
        out.append(FigureError(figure, predicted, actual, relative_error(actual, predicted),
                               band[0] if band else None, band[1] if band else None))
    return tuple(out)


def error_of(run: RecordedRun, figure: str) -> FigureError | None:
    return next((e for e in run_errors(run) if e.figure == figure), None)


def recordable(plan: Plan) -> list[str]:
    """Option ids a run can be recorded against: those that were timed (fit, or fit unknown)."""
    return [o.id for o in plan.options if o.fits is not False and o.step is not None and o.micro_batch]


def new_run(plan: Plan, option_id: str, *, scenario: Mapping[str, Any], predicted: Predicted, actual: ActualFigures,
            date: dt.date, note: str = "") -> RecordedRun:
    """A recorded run of one of the plan's options (not saved: planner.inputs.actuals.save_run writes it).

    `scenario` is the scenario dict the plan was made of; `predicted` the option's prediction now
    (planner.inputs.actuals.predicted_from_plan_json over the plan JSON), so the error stays reproducible.
    """
    o = plan.option(option_id)
    if o is None or option_id not in recordable(plan):
        raise InputError("recorded run", "option", option_id, "an option of the current plan that was timed")
    model = plan.model
    if model is None:
        raise InputError("recorded run", "model", None, "a plan that resolved its model")
    training = scenario.get("training") or {}
    micro = int(o.micro_batch or 0)
    accum = int(o.grad_accum or 1)
    global_batch = int(training.get("global_batch") or micro * accum * o.n_gpus)
    return RecordedRun(
        date=date, scenario_name=plan.scenario_name, scenario=scenario,
        option=RunOption(o.id, o.gpu_id, o.n_gpus, o.precision, micro, global_batch, accum),
        model=RunModel(model.name, int(model.params), int(model.seq_len) if model.seq_len else None,
                       model.flops_per_sample),
        actual=actual, predicted=predicted, note=note)
