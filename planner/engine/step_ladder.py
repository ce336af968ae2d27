"""The step-time ladder: one optimizer step of one option by the strongest method available (measured on this GPU >
its same-speed sibling's > transferred from other GPUs > the calibrated roofline > the default MFU), plus
accumulation, the optimizer, exposed communication and the input pipeline. One entry point: step_for."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from planner.engine import calibration, memo, memory, physics_bounds, scaling, steptime
from planner.engine.context import ModelFacts, micro_flops, model_facts
from planner.engine.estimates import Micro, ScalingEstimate, Source, StepEstimate, TimePoint, detail
from planner.engine.measurements import MeasurementIndex
from planner.engine.micro import Kept, MicroContext
from planner.engine.notes import Note
from planner.engine.option import OptionPlan
from planner.engine.step_formula import (
    NO_SLOWER_THAN,
    calibrated,
    default_mfu_micro,
    kernel_count,
    with_dequant,
)
from planner.engine.step_transfer import same_speed_precisions, sibling_reason, transferred
from planner.inputs.errors import CannotEstimate, InputError
from planner.inputs.folders import Inputs
from planner.inputs.profiles import GpuProfile
from planner.inputs.scenario import Hardware, ModelSpec, Scenario, TrainingSetup


@dataclass(frozen=True)
class TimedStep:
    """One option's optimizer step and, across GPUs, how it scales."""

    step: StepEstimate
    scaling: ScalingEstimate | None


@memo.cached
def step_for(inputs: Inputs, model: ModelSpec, training: TrainingSetup, hardware: Hardware, *, time_factor: float,
             gpu_id: str, n_gpus: int, precision: str, micro_batch: int, grad_accum: int,
             source: str = "<scenario>") -> TimedStep:
    """One optimizer step: k micro-steps + the optimizer once + exposed communication (input overlapping), on
    `hardware` (the scenario's, or the rental's layout when the rental decides which links are crossed).
    Cached per Inputs by these arguments, which are everything it reads."""
    ladder = _ladder(inputs, model, training, source=source)
    ctx = ladder.context(inputs)
    option = OptionPlan(gpu=inputs.profiles[gpu_id], n_gpus=n_gpus, precision=precision, micro_batch=micro_batch,
                        grad_accum=grad_accum)
    return _step(ctx, option, ladder.micro(ctx, gpu_id, precision, micro_batch), hardware=hardware,
                 time_factor=time_factor)


@dataclass(frozen=True, eq=False)
class _Ladder:
    """The micro-steps of one model and training set-up, kept per (GPU id, precision, micro-batch) for as long as
    the plan memo keeps the ladder (_ladder). One entry of the memo rather than one per micro-step: a micro-step
    is bounded by the same micro-step on every GPU its GPU dominates (physics_bounds), so a plan looks micro-steps
    up ~15 times for each it works out, and a memo key hashes the whole model and training set-up (issue 38).
    What a computation raises is not kept, as in the memo. It holds no reference to the Inputs (the memo of an
    Inputs goes with it): each call brings its MicroContext."""

    facts: ModelFacts
    training: TrainingSetup
    micros: dict[tuple[str, str, int], Micro] = field(default_factory=dict)
    kept: Kept = field(default_factory=Kept)

    def context(self, inputs: Inputs) -> MicroContext:
        """The MicroContext of these inputs (those the ladder was made from), sharing what the ladder keeps."""
        return MicroContext(inputs, self.facts, self.training, kept=self.kept)

    def micro(self, ctx: MicroContext, gpu_id: str, precision: str, micro_batch: int) -> Micro:
        key = (gpu_id, precision, micro_batch)
        got = self.micros.get(key)
        if got is None:
            got = self.micros[key] = _micro_for(self, ctx, gpu_id=gpu_id, precision=precision,
                                                micro_batch=micro_batch)
        return got


@memo.cached
def _ladder(inputs: Inputs, model: ModelSpec, training: TrainingSetup, *, source: str) -> _Ladder:
    """The ladder of one model and training set-up over these inputs (everything a micro-step reads but the GPU,
    the precision and the micro-batch)."""
    return _Ladder(model_facts(inputs, model, training, source), training)


def _micro_for(ladder: _Ladder, ctx: MicroContext, *, gpu_id: str, precision: str, micro_batch: int) -> Micro:
    """One micro-step by the ladder. It reads neither the GPU count nor the hardware (MicroContext), so every
    count and rental of an option shares it: the option it is given runs on one GPU without accumulation.
    Looked up through ladder.micro (kept there)."""
    inputs = ctx.inputs
    gpu = inputs.profiles[gpu_id]
    m = _from_partial(_micro_step(ctx, OptionPlan(gpu=gpu, n_gpus=1, precision=precision, micro_batch=micro_batch)))
    if m.includes_optimizer and m.optimizer_s is None:  # a figure without its phases: the optimizer by formula
        m = replace(m, optimizer_s=ctx.optimizer_s(gpu.memory_bandwidth_gb_per_s))
    if m.source.kind in _OWN_KINDS or m.source.kind == "user":
        # this GPU's own figure at this very batch (or its same-speed sibling's) is data, and a typed MFU is the
        # user's own figure for every GPU: they stand as given
        return m
    # A faster number format is never slower (step_formula.NO_SLOWER_THAN): a time moved from other GPUs or worked
    # out by formula takes the best of its precision and the slower formats' times on this GPU (two transfers from
    # different files, or a transfer and a formula, must not rank fp32 above tf32 or bf16).
    for slower in NO_SLOWER_THAN[precision][1:]:
        if not gpu.peak_tflops_for(slower):
            continue
        other = ladder.micro(ctx, gpu_id, slower, micro_batch)
        if other.seconds < m.seconds:
            m = replace(other, source=Source(other.source.kind, parts=(
                detail("no_slower", precision=precision, used=other.precision_used or slower),
                *other.source.parts)), precision_used=other.precision_used or slower)

    def time_on(other_id: str) -> Micro | None:
        try:
            return ladder.micro(ctx, other_id, precision, micro_batch)
        except InputError:  # no way to time it there (no FLOPs and nothing measured): no bound from it
            return None

    # a range widened for an unlike kind of run first, so the bounds hold whatever the widening
    return physics_bounds.bounded_micro(_unlike_corpus(ctx, m, gpu=gpu), gpu=gpu, precision=precision,
                                        profiles=inputs.profiles, below=_dominated(inputs, gpu_id, precision),
                                        flops=micro_flops(ctx.model, ctx.training, micro_batch), time_on=time_on)


def _from_partial(m: Micro) -> Micro:
    """A time that rests on a partial file's points (a sweep that stopped early) says so in its source, whatever the
    path (own GPU, transferred): the plan's source sentence, its JSON (`partial_files`) and the report (issue 34)."""
    files = tuple(dict.fromkeys(p.label for p in m.used if p.partial))
    return replace(m, source=m.source.plus(detail("partial_files", files=files))) if files else m


def _unlike_corpus(ctx: MicroContext, m: Micro, *, gpu: GpuProfile) -> Micro:
    """Flag `m` when no run in the inputs (published corpus, bench runs, recorded runs) shares the option's model
    family, software stack and architecture group (issue 32 e): nothing like it ever checked the time, so its range
    is at least the calibrated formula's held-out one (the p10-p90 of its errors on sources it was not fitted on,
    as a formula time has), whatever path gave the time."""
    kind = (ctx.model.family, ctx.stack, calibration.arch_group(gpu))
    if kind in _timed_kinds(ctx.inputs):
        return m
    t, (low, high) = m.seconds, m.band
    cal = ctx.inputs.calibration
    if cal is not None:
        low = min(low, t / (1.0 + max(cal.residual_p90, 0.05)))
        high = max(high, t / max(1.0 + min(cal.residual_p10, -0.05), 0.2))
    return replace(m, band=(low, high), unlike=Note("unlike_corpus", family=kind[0], stack=kind[1], group=kind[2]))


@memo.cached
def _timed_kinds(inputs: Inputs) -> frozenset[tuple[str, str, str]]:
    """(model family, stack, architecture group) of every one-GPU timed run the inputs hold: published figures by
    their provenance's stack, bench and recorded runs as plain eager PyTorch unless their file says otherwise."""
    kinds = set()
    for rf in inputs.results:
        gpu = inputs.profiles.get(rf.gpu_profile_id or "")
        if gpu is None or rf.device != "cuda":
            continue
        family = str(rf.model.get("family") or "custom")
        for m in rf.measurements:
            timed = (m.source == "published" and m.is_one_gpu and m.published_micro_step_s) or (
                m.source == "measured" and m.ok and m.step_time_s is not None)
            if timed:
                stack = (m.provenance.stack if m.provenance is not None else None) or (
                    "pytorch_eager" if m.source == "measured" else None)
                if stack:
                    kinds.add((family, stack, calibration.arch_group(gpu)))
    return frozenset(kinds)


@memo.cached
def _dominance(inputs: Inputs, precision: str) -> Mapping[str, tuple[str, ...]]:
    """physics_bounds.dominated over the loaded profiles, for every GPU once per precision."""
    return physics_bounds.dominated_by_gpu(inputs.profiles, precision)


def _dominated(inputs: Inputs, gpu_id: str, precision: str) -> tuple[str, ...]:
    return _dominance(inputs, precision)[gpu_id]


# Kinds that are this GPU's own figure at the very micro-batch (a fit over its points, or a scaling of one, is a model)
_OWN_KINDS = ("measured", "published")


def step_estimate(scenario: Scenario, inputs: Inputs, *, gpu_id: str, precision: str, micro_batch: int,
                  n_gpus: int = 1, source: str = "<scenario>") -> StepEstimate:
    """One option's optimizer step by the path a plan would take, without the memory fit, the cost and the
    workload's padding: what the calibration report compares with published runs (which ran, so they fit)."""
    if gpu_id not in inputs.profiles:
        raise InputError(source, "gpu_id", gpu_id, "a GPU profile id")
    return step_for(inputs, scenario.model, scenario.training, scenario.hardware, time_factor=1.0, gpu_id=gpu_id,
                    n_gpus=n_gpus, precision=precision, micro_batch=micro_batch,
                    grad_accum=max(1, scenario.training.global_batch // n_gpus // micro_batch), source=source).step


@dataclass(frozen=True)
class RooflineTerms:
    """What the calibrated roofline reads for one micro-step: FLOPs (checkpointing and frozen parameters counted),
    the dense peak it divides by, stored activation bytes, bandwidth, and the optimizer step added apart."""

    flops: float
    peak_tflops: float
    activation_bytes: float
    bandwidth_gb_per_s: float
    optimizer_s: float
    group: str
    kernels: float = 0.0  # kernel launches of the micro-step (kernel_count): × the per-op launch cost


def roofline_terms(scenario: Scenario, inputs: Inputs, *, gpu_id: str, precision: str, micro_batch: int,
                   source: str = "<scenario>") -> RooflineTerms:
    """The calibration's inputs for one configuration (calibration/calibrate.py fits on them; plans predict with them)."""
    t = scenario.training
    ctx = MicroContext(inputs, model_facts(inputs, scenario.model, t, source), t)
    gpu = inputs.profiles[gpu_id]
    option = OptionPlan(gpu=gpu, n_gpus=1, precision=precision, micro_batch=micro_batch,
                        grad_accum=max(1, t.global_batch // micro_batch))
    return RooflineTerms(
        flops=micro_flops(ctx.model, t, micro_batch), peak_tflops=physics_bounds.transfer_peak(gpu, precision) or 0.0,
        activation_bytes=activation_bytes(ctx, option) or 0.0,
        bandwidth_gb_per_s=gpu.memory_bandwidth_gb_per_s,
        optimizer_s=steptime.optimizer_step_s(ctx.trainable, t.optimizer, t.optimizer_impl,
                                              gpu.memory_bandwidth_gb_per_s),
        group=calibration.arch_group(gpu), kernels=(kernel_count(ctx, precision) or (0.0, ""))[0])


def activation_bytes(ctx: MicroContext, option: OptionPlan) -> float | None:
    """The step time's memory-traffic term: the activation bytes one micro-step writes, by the memory model (None
    when it has no way to tell). Whatever the peak's phase, and as if the base were trainable: a frozen layer
    still reads and writes its activations; only what autograd keeps for backward differs (memory, not time)."""
    line = ctx.facts.activation_line(option.precision, option.gpu.id)
    try:
        value, _ = memory.option_activation_bytes(ctx.model, ctx.training, option, line=line, adapter=None)
    except CannotEstimate:
        return None
    return value


def _step(ctx: MicroContext, option: OptionPlan, m: Micro, *, hardware: Hardware, time_factor: float) -> TimedStep:
    """The optimizer step around micro-step `m` on `hardware`, its rows padded by `time_factor`."""
    training, gpu, n = ctx.training, option.gpu, option.n_gpus
    opt_s = m.optimizer_s
    if opt_s is None:
        opt_s = ctx.optimizer_s(gpu.memory_bandwidth_gb_per_s)
    if time_factor != 1.0:
        m = _padded_micro(m, time_factor, optimizer_s=opt_s)
    if m.includes_optimizer:  # the optimizer is part of the measured step: never more than half of it
        opt_s = min(opt_s, 0.5 * m.seconds)
    fwd_bwd_s = m.seconds - opt_s if m.includes_optimizer else m.seconds
    # ZeRO (any stage) shards the optimizer state, so each GPU updates 1/N of the parameters (docs/methods.md#step-time;
    # Rajbhandari et al. 2020): a one-GPU optimizer phase becomes 1/N of itself per step.
    shards = n if training.sharding != "none" and n > 1 else 1
    opt_one_gpu_s, opt_s = opt_s, opt_s / shards
    scale = None
    exposed = 0.0
    if n > 1:
        measured_ddp = scaling.select_measured_ddp(ctx.idx.ddp, gpu.id, n, hardware.gpus_per_node)
        scale = scaling.estimate_scaling(
            option, training, hardware, trainable_params=ctx.trainable,
            params=ctx.model.params, micro_step_s=fwd_bwd_s, optimizer_s=opt_s,
            measured_ddp=measured_ddp[1] if measured_ddp else None,
            measured_label=measured_ddp[0] if measured_ddp else "bench ddp result")
        exposed = scale.exposed_comm_s
    input_s = steptime.input_time_s(option.micro_batch, ctx.model.input_cpu_s_per_sample,
                                    hardware.cpu_workers_per_gpu)
    step = steptime.assemble_step(m.seconds, m.band, m.source, grad_accum=option.grad_accum, optimizer_s=opt_s,
                                  samples_per_step=training.global_batch, input_s=input_s,
                                  exposed_comm_s=exposed, optimizer_included=m.includes_optimizer,
                                  optimizer_in_micro_s=opt_one_gpu_s,
                                  # exposed communication is modelled on top of the held-out one-GPU errors
                                  band_meaning=m.band_meaning if exposed == 0.0 else "assumed",
                                  input_overlaps=hardware.cpu_workers_per_gpu > 0,
                                  notes=[*_noise_notes(ctx.idx, m.precision_used or option.precision, m.used),
                                         *((m.unlike,) if m.unlike is not None else ())])
    return TimedStep(step, scale)


def _padded_micro(m: Micro, factor: float, *, optimizer_s: float) -> Micro:
    """A micro-step of rows padded below seq_len: forward+backward × F(p)/F(S) (planner/engine/sequences.py)."""
    return _work_scaled(m, factor, optimizer_s=optimizer_s, why=detail("padded", factor=factor))


def _work_scaled(m: Micro, factor: float, *, optimizer_s: float, why: Note) -> Micro:
    """A micro-step whose forward + backward do `factor` × the work: an optimizer step inside a measured micro-step,
    and QLoRA's dequantisation, keep their time (they depend neither on the tokens in a row nor on the FLOPs of a
    sample)."""
    inside = m.outside_s(optimizer_s)

    def scaled(t: float) -> float:
        return max(t - inside, 0.0) * factor + inside

    return replace(m, seconds=scaled(m.seconds), band=(scaled(m.band[0]), scaled(m.band[1])),
                   source=m.source.plus(why))


def _aligned(ctx: MicroContext, m: Micro, series: steptime.TimeSeries, precision: str, *, optimizer_s: float) -> Micro:
    """A published figure of a source other than the model's reference source (the one that timed it on the most
    GPUs), moved to the reference's level by the offset measured on the GPUs both timed (MeasurementIndex.alignment):
    GPU ratios then come from one source's same code, not from which source timed which GPU. Unchanged within 1 %."""
    first = series.points[0] if series.points else None
    if first is None or first.kind != "published":
        return m
    k, reference, shared = ctx.idx.alignment(first.source, precision)
    if reference is None or abs(k - 1.0) <= 0.01:
        return m
    return _work_scaled(m, k, optimizer_s=optimizer_s,
                        why=detail("aligned", source=first.source, reference=reference, factor=k, n=shared))


def _on_planned_stack(ctx: MicroContext, m: Micro, *, optimizer_s: float) -> Micro:
    """Figures timed on other software moved to the plan's stack: forward + backward × s[plan] / s[figure]
    (calibration.stack_factor_of; a figure that names no stack is taken as the plan's), said in the source with
    both stacks. Unchanged within 1 %."""
    cal, planned = ctx.inputs.calibration, ctx.stack
    stacks = [p.stack or planned for p in m.used] or [planned]
    timed = math.exp(sum(math.log(calibration.stack_factor_of(cal, st)) for st in stacks) / len(stacks))
    ratio = calibration.stack_factor_of(cal, planned) / timed
    if abs(ratio - 1.0) <= 0.01:
        return m
    return _work_scaled(m, ratio, optimizer_s=optimizer_s,
                        why=detail("stack_moved", stacks=", ".join(sorted(set(stacks))), stack=planned, factor=ratio))


def _analytic_on_planned_stack(ctx: MicroContext, m: Micro) -> Micro:
    """A formula time (fitted on eager-equivalent runs) on the plan's stack: forward + backward × its factor."""
    cal, planned = ctx.inputs.calibration, ctx.stack
    factor = calibration.stack_factor_of(cal, planned)
    if abs(factor - 1.0) <= 0.01:
        return m
    basis = cal.stack_basis.get(planned, "prior") if cal is not None else "prior"
    return _work_scaled(m, factor, optimizer_s=0.0,
                        why=detail("stack_factor", stack=planned, factor=factor, basis=basis))


def _at_typed_flops(ctx: MicroContext, m: Micro, *, optimizer_s: float) -> Micro:
    """A figure timed on the model's own configuration, moved to the FLOPs per sample the scenario typed (a
    ResNet-50 at 160 px does (160/224)² of the 224 px work): forward + backward × typed / timed, said in the
    source. Unchanged within 1 % (a typed figure that restates the timed one)."""
    typed, timed = ctx.model.flops_per_sample, ctx.model.figures_flops_per_sample
    # a figure whose file says what work it timed (a bench run, a recorded run of this very plan) is read as that
    own = [p.flops_per_sample for p in m.used if p.flops_per_sample]
    if own and len(own) == len(m.used):
        timed = math.exp(sum(math.log(f) for f in own) / len(own))
    if not typed or not timed or abs(typed / timed - 1.0) <= 0.01:
        return m
    return _work_scaled(m, typed / timed, optimizer_s=optimizer_s,
                        why=detail("flops_rescaled", ratio=typed / timed, typed=typed, timed=timed))


def _noise_notes(idx: MeasurementIndex, precision: str, used: Sequence[TimePoint]) -> list[Note]:
    """One note per noisy measurement the step time rests on (its per-step times varied by more than 10%)."""
    out = []
    for point in used:
        pct = idx.noisy_pct.get((point.label, precision, point.batch_size))
        if pct is not None:
            out.append(Note("noisy_measurement", file=point.label, iqr_pct=round(pct, 1)))
    return out


def _micro_step(ctx: MicroContext, option: OptionPlan) -> Micro:
    """Seconds for one micro-step by the strongest method available: measured > transferred > analytic."""
    model, gpu, precision, micro = ctx.model, option.gpu, option.precision, option.micro_batch
    # A typed model.mfu is the user's own figure: it decides the time (labelled user), not the measured points.
    same_speed = () if model.mfu else same_speed_precisions(gpu, precision)
    for used in same_speed:  # this GPU's own points: the precision's, else its same-speed 16-bit sibling's
        own = ctx.idx.series_at(gpu.id, used, micro)
        inside = (own.optimizer_s or ctx.optimizer_s(gpu.memory_bandwidth_gb_per_s)) if own else 0.0
        got = steptime.measured_micro_step(own, micro, optimizer_s=inside) if own else None
        if own and got:
            # The sibling's figure on this very GPU keeps its own kind (published, measured, interpolated...): it is
            # not a transfer from another GPU; the detail says which precision it was.
            source = got[1] if used == precision else Source(
                got[1].kind, parts=(sibling_reason(gpu, precision, used), *got[1].parts))
            mine = Micro(got[0], source, got[2], own.optimizer_s, True, steptime.points_used(own, micro),
                         precision_used=used)
            mine = _aligned(ctx, mine, own, used, optimizer_s=inside)
            return _at_typed_flops(ctx, _on_planned_stack(ctx, mine, optimizer_s=inside), optimizer_s=inside)
    flops = micro_flops(ctx.model, ctx.training, micro)
    timed = ctx.model.figures_flops_per_sample
    # other GPUs' figures ran the timed configuration: moved at its FLOPs, then to the typed ones
    timed_flops = micro_flops(replace(ctx.model, flops_per_sample=timed), ctx.training, micro) if timed else flops
    for used in same_speed:  # another GPU's points at the precision, else at its same-speed sibling
        moved = transferred(ctx, option, timed_flops, used)
        if moved:
            moved = _on_planned_stack(ctx, moved, optimizer_s=moved.optimizer_s or 0.0)
            return _at_typed_flops(ctx, moved, optimizer_s=moved.optimizer_s or 0.0)
    if not flops:
        raise InputError("<scenario>", "model.flops_per_sample", None,
                         f"FLOPs per sample for '{model.name}' (no measurement to use): give model.flops_per_sample "
                         "or run `python -m bench run`")
    # the calibrated roofline's memory-traffic term, worked out only on this path
    fitted = calibrated(ctx, option, flops, activation_bytes(ctx, option))
    if fitted is not None:
        return with_dequant(ctx, option, _analytic_on_planned_stack(ctx, fitted))
    formula = default_mfu_micro(ctx, option, flops)
    # a typed MFU is the user's own figure for their own stack: no stack factor on it
    return with_dequant(ctx, option, formula if ctx.model.mfu else _analytic_on_planned_stack(ctx, formula))


