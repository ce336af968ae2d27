"""What every option of one plan shares: the model's facts (resolved, measured, fitted) and the plan's context."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from planner.engine import convergence, memo, memory, published_memory, sequences, steptime
from planner.engine.estimates import ActivationLine, ConvergenceEstimate, ResolvedModel, Source, detail
from planner.engine.measurements import MeasurementIndex, index_measurements
from planner.engine.models import resolve_model
from planner.inputs.errors import CannotEstimate, InputError
from planner.inputs.folders import Inputs
from planner.inputs.scenario import ModelSpec, Scenario, TrainingSetup
from planner.vocab import PRECISIONS


@dataclass(frozen=True)
class ModelFacts:
    """One model under one training set-up, given the loaded inputs: its resolved numbers, the measurements that
    apply, the activation lines fitted on them and the published memory outcomes. A what-if that changes neither
    the model nor the training set-up reuses them (model_facts is cached per Inputs)."""

    model: ResolvedModel
    trainable: int
    idx: MeasurementIndex
    lines: Mapping[str, Mapping[str, ActivationLine | None]]  # precision -> GPU id (or '*') -> line
    # Published runs of exactly this configuration, by (GPU id, precision, micro-batch): they decide the verdict.
    published_memory: Mapping[tuple[str, str, int], published_memory.PublishedMemory] = field(default_factory=dict)

    def activation_line(self, precision: str, gpu_id: str) -> ActivationLine | None:
        """The GPU's own fitted line, else the one that stands for every GPU ('*')."""
        by_gpu = self.lines[precision]
        return by_gpu.get(gpu_id) or by_gpu.get("*")


@memo.cached
def model_facts(inputs: Inputs, spec: ModelSpec, training: TrainingSetup, source: str) -> ModelFacts:
    """The model's facts (ModelFacts); bad input raises InputError naming `source`."""
    model = resolve_model(spec, inputs.results, source)
    idx = index_measurements(inputs.results, model, training, profiles=inputs.profiles, trusted=inputs.trusted_results)
    # every precision, not only the scenario's: a precision's time may be a slower format's (no slower than it)
    lines: dict[str, Mapping[str, ActivationLine | None]] = {p: _activation_lines(idx, model, p) for p in PRECISIONS}
    return ModelFacts(model, memory.trainable_params(model, training), idx, lines,
                      published_memory.index_published_memory(inputs.results, model, training))


@dataclass(frozen=True)
class PlanContext:
    """What every option of one plan shares: the scenario, its inputs, the model's facts, the convergence."""

    scenario: Scenario
    inputs: Inputs
    facts: ModelFacts
    conv: ConvergenceEstimate
    today: dt.date
    source: str
    work: sequences.SequenceWork | None = None  # the workload's token fields (packing, padding), when given

    @property
    def model(self) -> ResolvedModel:
        return self.facts.model

    @property
    def idx(self) -> MeasurementIndex:
        return self.facts.idx

    @property
    def time_factor(self) -> float:
        """Forward+backward × this for rows padded below the sequence length (1.0 when none are)."""
        return self.work.time_factor if self.work is not None else 1.0


def plan_context(scenario: Scenario, inputs: Inputs, today: dt.date, source: str) -> PlanContext:
    facts = model_facts(inputs, scenario.model, scenario.training, source)
    model = facts.model
    try:
        work = sequences.sequence_work(scenario.workload, params=model.params, shape=model.transformer,
                                       seq_len=model.seq_len)
    except sequences.SequenceFieldError as exc:
        value = getattr(scenario.workload, exc.field.removeprefix("workload."))
        raise InputError(source, exc.field, value, str(exc)) from None
    # Packed examples: the dataset counts in full sequences (training rows); unpacked, a row holds m real tokens.
    workload = scenario.workload if work is None else replace(scenario.workload, dataset_samples=work.dataset_rows)
    tokens_per_row = model.seq_len if work is None else round(work.tokens_per_row)
    try:
        conv = convergence.estimate_convergence(workload, scenario.training.global_batch, tokens_per_row)
    except CannotEstimate as exc:
        raise InputError(source, exc.field, model_label(scenario), exc.missing) from None
    except convergence.ConvergenceFitError as exc:
        raise InputError(source, "workload.reference_points",
                         [(p.global_batch, p.steps or p.epochs) for p in scenario.workload.reference_points],
                         f"points that give a positive McCandlish fit ({exc}); add workload.b_crit, or use "
                         "epochs or tokens") from None
    return PlanContext(scenario, inputs, facts, conv, today, source, work)


def model_label(scenario: Scenario) -> object:
    return scenario.model.name or scenario.model.params


def gpu_ids(scenario: Scenario, inputs: Inputs, source: str) -> list[str]:
    """The scenario's GPUs (every profile when it names none); an unknown id is bad input."""
    if scenario.hardware.gpus is None:
        return sorted(inputs.profiles)
    for i, gid in enumerate(scenario.hardware.gpus):
        if gid not in inputs.profiles:
            raise InputError(source, f"hardware.gpus[{i}]", gid,
                             "a known GPU profile id: " + ", ".join(sorted(inputs.profiles)))
    return list(scenario.hardware.gpus)


def trainable_fraction(model: ResolvedModel, training: TrainingSetup) -> float:
    """f_T for the backward cost: trainable / all parameters (LoRA/QLoRA and freezing leave few weight grads)."""
    total = memory.total_params(model, training)
    return min(1.0, memory.trainable_params(model, training) / total) if total else 1.0


def micro_flops(model: ResolvedModel, training: TrainingSetup, micro_batch: int) -> float:
    """Model FLOPs of one micro-step, recompute and frozen parameters counted (steptime.compute_factor)."""
    return steptime.flops_per_step(model.flops_per_sample or 0.0, micro_batch) * steptime.compute_factor(
        training.activation_checkpointing, trainable_fraction(model, training))


def model_flops_per_sample(ctx: PlanContext) -> float | None:
    """Model FLOPs one training row costs, forward + backward, as MFU counts them (PaLM, Chowdhery et al. 2022,
    App. B): frozen weights' gradients left out (steptime.compute_factor), activation recompute left out, rows
    padded short of the sequence length at their padded length (ctx.time_factor). None: FLOPs unknown."""
    f = ctx.model.flops_per_sample
    if not f:
        return None
    return f * steptime.compute_factor(False, trainable_fraction(ctx.model, ctx.scenario.training)) * ctx.time_factor


def _activation_lines(idx: MeasurementIndex, model: ResolvedModel,
                      precision: str) -> dict[str, ActivationLine | None]:
    """Per GPU id (and '*' for any GPU), the activation line fitted on measured or traced peaks."""
    out: dict[str, ActivationLine | None] = {}
    for (gpu, p), points in idx.peaks.items():
        if p != precision or len(points) < 2:
            continue
        first = points[0]
        trainable = first.trainable_params or model.params
        states = memory.model_state_bytes(model.params, trainable, optimizer=first.optimizer,
                                          state_layout="torch_amp", precision=precision)
        kind = "traced" if gpu == "traced" else "measured"
        how = detail("peaks", batches=tuple(sorted({pt.batch_size for pt in points})),
                     files=", ".join(sorted({pt.label for pt in points})))
        line = memory.fit_activation_line([(pt.batch_size, pt.peak_bytes) for pt in points],
                                          states.weights + states.grads + states.optimizer, precision,
                                          Source(kind, parts=(how,)))
        if line is not None:
            out[gpu] = line
    measured = [(g, line) for g, line in out.items() if g != "traced" and line is not None]
    if measured:  # another GPU's measured line stands for every GPU without its own, and says whose it is
        g, line = measured[0]
        out["*"] = replace(line, source=Source("transferred", parts=(detail("transferred_gpu", gpu=g,
                                                                                    source=line.source),)))
    else:
        out["*"] = out.get("traced")
    return out
