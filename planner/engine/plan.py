"""Build a Plan: every GPU x count x precision option with memory fit, step time, convergence and cost."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from planner.engine import (
    calibration,
    convergence,
    cost,
    memo,
    memory,
    op_classes,
    published_memory,
    scaling,
    sequences,
    steptime,
)
from planner.engine.estimates import (
    ActivationLine,
    ConvergenceEstimate,
    CostEstimate,
    MemoryEstimate,
    Plan,
    PlanOption,
    ResolvedModel,
    ScalingEstimate,
    Source,
    StepEstimate,
    TimePoint,
)
from planner.engine.measurements import (
    MeasurementIndex,
    OpClassLine,
    index_measurements,
    shape_twin_op_classes,
)
from planner.engine.models import resolve_model
from planner.engine.notes import PLAN_LEVEL_NOTE_KEYS, Note
from planner.engine.option import OptionPlan
from planner.engine.recommend import cost_deadline_hours, recommend
from planner.inputs.errors import CannotEstimate, InputError
from planner.inputs.folders import Inputs
from planner.inputs.profiles import GpuProfile
from planner.inputs.scenario import Constraints, Hardware, Scenario
from planner.inputs.zoo_catalog import canonical_id
from planner.vocab import GIB

# ---------------------------------------------------------------- plan

def build_plan(scenario: Scenario, inputs: Inputs, today: dt.date | None = None, source: str = "<scenario>") -> Plan:
    """Plan every option of the scenario. Bad input raises InputError; infeasible options carry their numbers."""
    today = today or dt.date.today()
    gpu_ids = _gpu_ids(scenario, inputs, source)
    ctx = _context(scenario, inputs, today, source)
    model, idx, trainable, conv = ctx.model, ctx.idx, ctx.trainable, ctx.conv
    options: list[PlanOption] = []
    for gpu_id in gpu_ids:
        gpu = inputs.profiles[gpu_id]
        for precision in scenario.training.precisions:
            for n in scenario.hardware.gpu_counts:
                try:
                    options.append(_option(ctx, gpu, n, precision))
                except CannotEstimate as exc:
                    raise InputError(source, exc.field, _model_label(scenario), exc.missing) from None
    rec = recommend(options, scenario.constraints, today)
    warnings: list[Note | str] = [*inputs.problems, *_plan_warnings(scenario, options, today)]
    advice = _batch_advice(scenario, conv, ctx.work.dataset_rows if ctx.work else scenario.workload.dataset_samples)
    return Plan(
        scenario_name=scenario.name,
        options=tuple(options),
        recommendation=rec,
        assumptions=tuple(_assumptions(scenario, model, conv, idx)) + (ctx.work.notes if ctx.work else ()),
        warnings=tuple(dict.fromkeys(warnings)),
        profiles_used=tuple(gpu_ids),
        result_files_used=tuple(sorted(idx.files_used)),
        advice=advice,
        extra={"model": model, "convergence": conv, "trainable_params": trainable, "skipped_files": idx.skipped},
    )


def step_estimate(scenario: Scenario, inputs: Inputs, *, gpu_id: str, precision: str, micro_batch: int,
                  n_gpus: int = 1, source: str = "<scenario>") -> StepEstimate:
    """One option's optimizer step by the path a plan would take, without the memory fit and the cost: what
    perf/calibration_report.py compares with published runs (which ran, so they fit)."""
    ctx = _context(scenario, inputs, dt.date.today(), source)
    gpu = inputs.profiles.get(gpu_id)
    if gpu is None:
        raise InputError(source, "gpu_id", gpu_id, "a GPU profile id")
    option = _fixed_option(scenario, gpu, precision=precision, micro_batch=micro_batch, n_gpus=n_gpus)
    return _step(ctx, option, _activation_bytes(ctx, option))[0]


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
    kernels: float = 0.0  # kernel launches of the micro-step (_kernels): × the per-op launch cost, added unscaled
    classes: calibration.ClassTerms | None = None  # the per-class split (_class_terms), when a trace gives one


def roofline_terms(scenario: Scenario, inputs: Inputs, *, gpu_id: str, precision: str, micro_batch: int,
                   source: str = "<scenario>") -> RooflineTerms:
    """The calibration's inputs for one configuration (perf/calibrate.py fits on them; plans predict with them)."""
    ctx = _context(scenario, inputs, dt.date.today(), source)
    gpu = inputs.profiles[gpu_id]
    option = _fixed_option(scenario, gpu, precision=precision, micro_batch=micro_batch, n_gpus=1)
    return RooflineTerms(
        flops=_micro_flops(ctx, micro_batch), peak_tflops=_transfer_peak(gpu, precision) or 0.0,
        activation_bytes=_activation_bytes(ctx, option) or 0.0,
        bandwidth_gb_per_s=gpu.memory_bandwidth_gb_per_s,
        optimizer_s=steptime.optimizer_step_s(ctx.trainable, scenario.training.optimizer,
                                              scenario.training.optimizer_impl, gpu.memory_bandwidth_gb_per_s),
        group=calibration.arch_group(gpu), kernels=(_kernels(ctx, precision) or (0.0, ""))[0],
        classes=_class_terms(ctx, gpu, precision, micro_batch))


def _class_terms(ctx: _Context, gpu: GpuProfile, precision: str, micro_batch: int) -> calibration.ClassTerms | None:
    """The micro-step by operator class at 100% of this GPU's dense peak and bandwidth (None without a split): the
    model's own trace, else a traced model of the same transformer shape (measurements.shape_twin_op_classes)."""
    # Worked out here, not per plan: only the calibration's measurement (perf/class_roofline.py) reads the split.
    # The first split that counts the scenario's FLOPs: the model's own trace, a traced twin, the shape per layer.
    splits: tuple[Callable[[], dict[str, OpClassLine]], ...] = (
        lambda: dict(ctx.idx.op_classes),
        lambda: shape_twin_op_classes(ctx.inputs.results, ctx.model, ctx.scenario.training),
        lambda: _analytic_op_classes(ctx))
    classes: dict[str, OpClassLine] = {}
    for split in splits:
        classes = _same_step(split(), ctx.model, ctx.scenario)
        if classes:
            break
    line = classes.get(precision)
    peak = _transfer_peak(gpu, precision)
    if line is None or not peak:
        return None
    flops_per_s, bytes_per_s = peak * 1e12, gpu.memory_bandwidth_gb_per_s * 1e9
    return calibration.ClassTerms(
        matmul_s=line.at("matmul.flops", micro_batch) / flops_per_s,
        attention_s=line.at("attention.flops", micro_batch) / flops_per_s,
        matmul_bytes_s=line.at("matmul.bytes", micro_batch) / bytes_per_s,
        attention_bytes_s=line.at("attention.bytes", micro_batch) / bytes_per_s,
        other_bytes_s=(line.at("elementwise.bytes", micro_batch) + line.at("embedding_loss.bytes", micro_batch))
        / bytes_per_s)


def _fixed_option(scenario: Scenario, gpu: GpuProfile, *, precision: str, micro_batch: int,
                  n_gpus: int) -> OptionPlan:
    per_gpu = scenario.training.global_batch // n_gpus
    return OptionPlan(gpu=gpu, n_gpus=n_gpus, precision=precision, micro_batch=micro_batch,
                      grad_accum=max(1, per_gpu // micro_batch))


def _activation_bytes(ctx: _Context, option: OptionPlan) -> float | None:
    """The step time's memory-traffic term: the activation bytes one micro-step writes, by the memory model (None
    when it has no way to tell). Whatever the peak's phase, and as if the base were trainable: a frozen layer
    still reads and writes its activations; only what autograd keeps for backward differs (memory, not time)."""
    line = ctx.lines[option.precision].get(option.gpu.id) or ctx.lines[option.precision].get("*")
    try:
        value, _ = memory.option_activation_bytes(ctx.model, ctx.scenario.training, option, line=line, adapter=None)
    except CannotEstimate:
        return None
    return value


def _micro_flops(ctx: _Context, micro_batch: int) -> float:
    return steptime.flops_per_step(ctx.model.flops_per_sample or 0.0, micro_batch) * steptime.compute_factor(
        ctx.scenario.training.activation_checkpointing, _trainable_fraction(ctx.model, ctx.scenario))


def _context(scenario: Scenario, inputs: Inputs, today: dt.date, source: str) -> _Context:
    model = resolve_model(scenario.model, inputs.results, source)
    idx = index_measurements(inputs.results, model, scenario.training)
    trainable = memory.trainable_params(model, scenario.training)
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
        raise InputError(source, exc.field, _model_label(scenario), exc.missing) from None
    except convergence.ConvergenceFitError as exc:
        raise InputError(source, "workload.reference_points",
                         [(p.global_batch, p.steps or p.epochs) for p in scenario.workload.reference_points],
                         f"points that give a positive McCandlish fit ({exc}); add workload.b_crit, or use "
                         "epochs or tokens") from None
    lines = {p: _activation_line(idx, model, p) for p in scenario.training.precisions}
    return _Context(scenario, inputs, model, trainable, conv, idx, lines, today, work,
                    published_memory.index_published_memory(inputs.results, model, scenario.training))


@dataclass(frozen=True)
class _Context:
    """What every option of one plan shares: the scenario, its inputs, and what was worked out once for all."""

    scenario: Scenario
    inputs: Inputs
    model: ResolvedModel
    trainable: int
    conv: ConvergenceEstimate
    idx: MeasurementIndex
    lines: Mapping[str, Mapping[str, ActivationLine | None]]  # precision -> GPU id (or '*') -> line
    today: dt.date
    work: sequences.SequenceWork | None = None  # the workload's token fields (packing, padding), when given
    # Published runs of exactly this configuration, by (GPU id, precision, micro-batch): they decide the verdict.
    published_memory: Mapping[tuple[str, str, int], published_memory.PublishedMemory] = field(default_factory=dict)


# A trace's split is the scenario's step only when it counts the same FLOPs (a sequence classifier traced as the
# zoo's masked-LM model carries a vocabulary projection the scenario does not run, for one).
SAME_STEP_FLOPS_TOLERANCE = 0.05


def _analytic_op_classes(ctx: _Context) -> dict[str, OpClassLine]:
    """A typed transformer shape with neither a trace nor a traced twin: its split per layer (op_classes.py), for
    plain training only, as the twin (recompute, frozen layers and adapters change the op mix)."""
    shape, t = ctx.model.transformer, ctx.scenario.training
    if shape is None or t.activation_checkpointing or t.frozen_fraction or t.adapter:
        return {}
    out = {}
    for precision in t.precisions:
        line = op_classes.analytic_op_classes(shape, family=ctx.model.family, precision=precision,
                                              attention=ctx.model.attention, parameters=ctx.model.params)
        if line is not None:
            out[precision] = line
    return out


def _same_step(classes: dict[str, OpClassLine], model: ResolvedModel, scenario: Scenario) -> dict[str, OpClassLine]:
    """The per-class splits whose traced FLOPs per sample (matmul + attention) match the model's within 5%."""
    want = (model.flops_per_sample or 0.0) * steptime.compute_factor(
        scenario.training.activation_checkpointing, _trainable_fraction(model, scenario))
    if want <= 0:
        return {}
    out = {}
    for precision, line in classes.items():
        traced = line.fields["matmul.flops"][0] + line.fields["attention.flops"][0]  # per-sample slopes
        if abs(traced / want - 1.0) <= SAME_STEP_FLOPS_TOLERANCE:
            out[precision] = line
    return out


def _model_label(scenario: Scenario) -> object:
    return scenario.model.name or scenario.model.params


def _gpu_ids(scenario: Scenario, inputs: Inputs, source: str) -> list[str]:
    if scenario.hardware.gpus is None:
        return sorted(inputs.profiles)
    for i, gid in enumerate(scenario.hardware.gpus):
        if gid not in inputs.profiles:
            raise InputError(source, f"hardware.gpus[{i}]", gid,
                             "a known GPU profile id: " + ", ".join(sorted(inputs.profiles)))
    return list(scenario.hardware.gpus)


def _activation_line(idx: MeasurementIndex, model: ResolvedModel,
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
        detail = ", ".join(sorted({pt.label for pt in points}))
        line = memory.fit_activation_line([(pt.batch_size, pt.peak_bytes) for pt in points],
                                          states.weights + states.grads + states.optimizer, precision,
                                          Source(kind, f"peaks fitted over batches "
                                                       f"{sorted({pt.batch_size for pt in points})} in {detail}"))
        if line is not None:
            out[gpu] = line
    measured = [(g, line) for g, line in out.items() if g != "traced" and line is not None]
    if measured:  # another GPU's measured line stands for every GPU without its own, and says whose it is
        g, line = measured[0]
        out["*"] = replace(line, source=Source("transferred", f"from {g} ({line.source})"))
    else:
        out["*"] = out.get("traced")
    return out


@lru_cache(maxsize=256)
def _divisors_desc(n: int) -> tuple[int, ...]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(sorted({*small, *(n // d for d in small)}, reverse=True))


def _largest_fitting(candidates_desc: Sequence[int],
                     memory_at: Callable[[int], MemoryEstimate]) -> tuple[int, MemoryEstimate]:
    """Largest candidate micro-batch that fits with at least TIGHT_HEADROOM to spare, else the largest that fits at
    all (tight: the recommendation counts it against the option), else the smallest. Memory grows with the batch,
    so each is a binary search; a smaller micro-batch costs only launch overhead and small-matmul efficiency, while
    a 4%-headroom run is one allocator hiccup from an out-of-memory error."""
    def largest(ok: Callable[[MemoryEstimate], bool]) -> tuple[int, MemoryEstimate] | None:
        lo, hi = 0, len(candidates_desc) - 1
        best: tuple[int, MemoryEstimate] | None = None
        while lo <= hi:
            mid = (lo + hi) // 2
            mem = memory_at(candidates_desc[mid])
            if ok(mem):
                best = (candidates_desc[mid], mem)
                hi = mid - 1
            else:
                lo = mid + 1
        return best

    found = largest(lambda m: bool(m.fits) and m.headroom >= memory.TIGHT_HEADROOM) or largest(lambda m: bool(m.fits))
    if found is not None:
        return found
    smallest = candidates_desc[-1]
    return smallest, memory_at(smallest)


def _option(ctx: _Context, gpu: GpuProfile, n: int, precision: str) -> PlanOption:
    scenario, t = ctx.scenario, ctx.scenario.training
    option = OptionPlan(gpu=gpu, n_gpus=n, precision=precision)
    base = PlanOption(id=option.id, gpu_id=gpu.id, gpu_name=gpu.name, n_gpus=n, precision=precision, fits=False,
                      micro_batch=None, grad_accum=None, memory=None, step=None, convergence=ctx.conv, cost=None,
                      scaling=None, checkpoint_gib=None)
    if not gpu.supports(precision):
        return replace(base, notes=(Note("unsupported_precision", precision=precision, gpu=gpu.name),))
    per_gpu = t.global_batch // n
    line = ctx.lines[precision].get(gpu.id) or ctx.lines[precision].get("*")
    candidates = (t.micro_batch,) if t.micro_batch else _divisors_desc(per_gpu)

    def memory_at(b: int) -> MemoryEstimate:
        est = memory.estimate_memory(ctx.model, t, replace(option, micro_batch=b, grad_accum=per_gpu // b),
                                     line=line, workspace_gib=scenario.hardware.workspace_gib)
        published = ctx.published_memory.get((gpu.id, precision, b)) if n == 1 else None
        return published_memory.decided_by(est, published) if published else est

    # The search reads the model, the training set-up, the workspace and this option (and the inputs): a what-if
    # that changes the workload, pricing or constraints reuses it (memo.py).
    micro, mem = memo.memoized(ctx.inputs, ("fit", scenario.model, t, scenario.hardware.workspace_gib, gpu.id, n,
                                            precision), lambda: _largest_fitting(candidates, memory_at))
    option = replace(option, micro_batch=micro, grad_accum=per_gpu // micro)
    notes = list(mem.notes)
    ckpt = memory.checkpoint_bytes(memory.total_params(ctx.model, t), ctx.trainable, optimizer=t.optimizer,
                                   state_layout=t.state_layout, precision=precision,
                                   adapter_base_dtype=t.adapter.base_dtype if t.adapter else None,
                                   quantized_params=memory.quantized_base_params(ctx.model)) / GIB
    if mem.fits is False:
        notes.insert(0, Note("does_not_fit", need=round(mem.total / GIB, 1), micro=micro,
                             usable=round(mem.usable / GIB, 1), capacity=round(mem.capacity / GIB, 1)))
        return replace(base, micro_batch=micro, grad_accum=option.grad_accum, memory=mem, checkpoint_gib=ckpt,
                       notes=tuple(notes))
    if mem.fits is None and not t.micro_batch:
        notes.append(Note("micro_batch_fit_unknown", micro=micro))
    # The rental first: its instances decide which links the gradients cross, so time and price assume the same
    # hardware (issue 18). On-prem and unpriced options are timed on the scenario's hardware.
    hw = scenario.hardware
    overrides = ctx.inputs.price_overrides.get(gpu.id, [])
    billings: tuple[cost.Billing | None, ...] = (None,)
    no_quote: Note | None = None
    if scenario.pricing.tier != "on_prem":
        billings, no_quote = memo.memoized(ctx.inputs, ("rentals", gpu.id, n, scenario.pricing, hw.gpus_per_node,
                                                        ctx.today), lambda: _rentals(ctx, gpu, n))
    else:  # no cited purchase price and no override: unpriced, with a note saying how to price it
        no_quote = cost.on_prem_unpriced(gpu, scenario.pricing.on_prem)
    power_w = ctx.idx.power_w.get((gpu.id, precision))
    activation_bytes = _activation_bytes(ctx, option)
    # Everything _step reads besides the inputs: the model, the training set-up, the scenario's hardware (input
    # workers), the padding factor of the workload's rows, this option and the rental's layout.
    step_key = ("step", scenario.model, t, hw, ctx.work.time_factor if ctx.work else None, gpu.id, n, precision,
                micro, activation_bytes)

    def priced(billing: cost.Billing | None) -> tuple[StepEstimate, ScalingEstimate | None, CostEstimate]:
        timing_hw = hw
        if billing is not None:
            timing_hw = replace(hw, gpus_per_node=billing.gpus_per_node,
                                inter_node_gb_per_s=billing.inter_node_gb_per_s or hw.inter_node_gb_per_s)
        step, scale = memo.memoized(ctx.inputs, (*step_key, timing_hw),
                                    lambda: _step(ctx, option, activation_bytes, hardware=timing_hw))
        if no_quote is None:
            c = cost.estimate_cost(option, step, ctx.conv, scenario.pricing, scenario.workload, mean_power_w=power_w,
                                   overrides=overrides, today=ctx.today, gpus_per_node=hw.gpus_per_node,
                                   billing=billing, storage=ctx.inputs.storage)
        else:
            c = cost.estimate_time_only(option, step, ctx.conv, scenario.pricing, scenario.workload,
                                        mean_power_w=power_w, reason=no_quote)
        return step, scale, c

    # Each candidate rental is timed on its own hardware and the cheapest in total is billed (ties: the sooner):
    # by the hourly rate alone, slow 1-GPU rentals would win over a dearer node that finishes first.
    timed = [(b, *priced(b)) for b in billings]
    billing, step, scale, c = min(timed, key=lambda t: _rental_preference(t[3], scenario.constraints))
    first = timed[0]
    if billing is not None and first[0] is not None and billing is not first[0]:
        notes.append(Note("billed_by_total", provider=billing.quote.provider, instance=billing.quote.instance,
                          usd=f"{c.usd:,.2f}", other_provider=first[0].quote.provider,
                          other=first[0].quote.instance, other_usd=f"{first[3].usd:,.2f}"))
    # Unpriced: timed on the scenario's own nodes; a job no rental can hold has no topology.
    topology = (billing.topology if billing else None if no_quote is not None and no_quote.key == "no_rentable_topology"
                else cost.topology_for(n, hw.gpus_per_node, hw.gpus_per_node))
    notes.extend(step.notes)
    if precision == "fp16":
        notes.append(Note("fp16_loss_scaling"))
    notes.extend(n for n in c.notes if n.key not in PLAN_LEVEL_NOTE_KEYS)
    return replace(base, fits=mem.fits, micro_batch=micro, grad_accum=option.grad_accum, memory=mem, step=step, cost=c,
                   scaling=scale, checkpoint_gib=ckpt, topology=topology, notes=tuple(dict.fromkeys(notes)))


def _rentals(ctx: _Context, gpu: GpuProfile, n: int) -> tuple[tuple[cost.Billing | None, ...], Note | None]:
    """The rentals that can run n of this GPU (cost.billing_candidates), or none and the note saying why."""
    hw = ctx.scenario.hardware
    try:
        return tuple(cost.billing_candidates(gpu.prices, ctx.scenario.pricing, ctx.inputs.price_overrides.get(gpu.id, []),
                                            ctx.today, n_gpus=n, gpus_per_node=hw.gpus_per_node,
                                            networks=ctx.inputs.networks, gpu_name=gpu.name, gpu_id=gpu.id)), None
    except cost.NoQuoteError as exc:
        return (None,), exc.note


def _rental_preference(c: CostEstimate, constraints: Constraints) -> tuple[bool, float, float]:
    """Among rentals of one option: those that meet the deadline at the scenario's confidence first (a cheaper but
    slower rental must not cost the option its deadline), then the lowest total, then the sooner."""
    misses = constraints.deadline_hours is not None and cost_deadline_hours(c, constraints.deadline_confidence) > \
        constraints.deadline_hours
    return misses, c.usd, c.hours


def _trainable_fraction(model: ResolvedModel, scenario: Scenario) -> float:
    """f_T for the backward cost: trainable / all parameters (LoRA/QLoRA and freezing leave few weight grads)."""
    total = memory.total_params(model, scenario.training)
    return min(1.0, memory.trainable_params(model, scenario.training) / total) if total else 1.0


@dataclass(frozen=True)
class _Micro:
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


def _micro_step(ctx: _Context, option: OptionPlan, activation_bytes: float | None = None) -> _Micro:
    """Seconds for one micro-step by the strongest method available: measured > transferred > analytic."""
    model, gpu, precision, micro = ctx.model, option.gpu, option.precision, option.micro_batch
    # A typed model.mfu is the user's own figure: it decides the time (labelled user), not the measured points.
    same_speed = () if model.mfu else _same_speed_precisions(gpu, precision)
    for used in same_speed:  # this GPU's own points: the precision's, else its same-speed 16-bit sibling's
        own = ctx.idx.series_at(gpu.id, used, micro)
        got = steptime.measured_micro_step(own, micro) if own else None
        if own and got:
            # The sibling's figure on this very GPU keeps its own kind (published, measured, interpolated...): it is
            # not a transfer from another GPU; the detail says which precision it was.
            source = got[1] if used == precision else Source(
                got[1].kind, f"{_sibling_reason(gpu, precision, used)}; {got[1].detail}")
            return _Micro(got[0], source, got[2], own.optimizer_s, True, steptime.points_used(own, micro),
                          precision_used=used)
    flops = _micro_flops(ctx, micro)
    for used in same_speed:  # another GPU's points at the precision, else at its same-speed sibling
        transferred = _transferred(ctx, option, flops, used)
        if transferred:
            return transferred
    if not flops:
        raise InputError("<scenario>", "model.flops_per_sample", None,
                         f"FLOPs per sample for '{model.name}' (no measurement to use): give model.flops_per_sample "
                         "or run `python -m bench run`")
    calibrated = _calibrated(ctx, option, flops, activation_bytes)
    if calibrated is not None:
        return _with_dequant(ctx, option, calibrated)
    return _with_dequant(ctx, option, _default_mfu_micro(ctx, option, flops))


def _with_dequant(ctx: _Context, option: OptionPlan, m: _Micro) -> _Micro:
    """A formula time plus QLoRA's dequantisation (steptime.dequant_s); measured and transferred times come from runs
    of the same adapter (measurements.py matches it), so they already hold it."""
    adapter = ctx.scenario.training.adapter
    if adapter is None or adapter.base_dtype not in ("nf4", "nf4_dq"):
        return m
    quantized = memory.quantized_base_params(ctx.model)
    extra = steptime.dequant_s(quantized, option.gpu.memory_bandwidth_gb_per_s)
    detail = (f"{m.source.detail}; + {steptime.format_duration(extra)} to dequantise the nf4 base weights "
              f"({steptime.DEQUANT_PASSES} passes × {quantized:,} parameters × "
              f"{steptime.QLORA_DEQUANT_BYTES_PER_PARAM_PASS:g} B at {option.gpu.memory_bandwidth_gb_per_s:g} GB/s, "
              "from LitGPT's published LoRA/QLoRA pair)")
    low, high = m.band
    return replace(m, seconds=m.seconds + extra, source=Source(m.source.kind, detail), band=(low + extra, high + extra),
                   fixed_s=m.fixed_s + extra)


def _default_mfu_micro(ctx: _Context, option: OptionPlan, flops: float) -> _Micro:
    """F / (P × MFU) with the default (or the typed) MFU: the path without a calibration or an activation size."""
    model, gpu, precision = ctx.model, option.gpu, option.precision
    t, mfu, used = _analytic_seconds(model, gpu, precision, flops)
    mfu_origin = "yours: scenario model.mfu" if model.mfu else f"default for {model.family} {used}"
    if not model.mfu and used == "fp32" and gpu.compute_capability in _DUAL_ISSUE_FP32_CC:
        mfu_origin += f", × {DUAL_ISSUE_FP32_FACTOR:g} for the dual-issue fp32 peak of this architecture"
    detail = (f"F / (P × MFU): F = {flops:.3g} FLOPs per micro-step, P = {gpu.peak_tflops_for(used):g} TFLOP/s "
              f"dense {used}, MFU {mfu:.2f} ({mfu_origin})")
    if used != precision:
        detail += f"; {precision} is assumed no slower than {used}"
    launch, launch_detail = _launch(ctx, precision)
    t = calibration.launch_bound_s(t, launch)
    return _Micro(t, Source("user" if model.mfu else "analytic", detail + launch_detail), (0.6 * t, 1.6 * t), None,
                  False)


def _kernels(ctx: _Context, precision: str) -> tuple[float, str] | None:
    """Kernel launches of one micro-step (forward + backward) and where the count comes from: the model's trace,
    else per layer for a typed transformer shape (steptime.transformer_aten_ops); None when neither exists."""
    traced = ctx.idx.aten_ops.get(precision)
    if traced is not None:
        return traced[0], f"{traced[0]:,.0f} traced aten ops in {traced[2]}"
    shape = ctx.model.transformer
    if shape is None:
        return None
    # recompute and frozen weights change the op count as they change the FLOPs (same op mix per layer)
    factor = steptime.compute_factor(ctx.scenario.training.activation_checkpointing,
                                     _trainable_fraction(ctx.model, ctx.scenario))
    n = steptime.transformer_aten_ops(shape.layers, precision) * factor
    return n, f"{n:,.0f} aten ops estimated for {shape.layers} transformer layers (per-layer count of the shipped traces)"


def _launch(ctx: _Context, precision: str) -> tuple[float, str]:
    """(seconds, detail) of the launch floor kernels × launch cost (0 when the kernel count is unknown)."""
    cal = ctx.inputs.calibration
    per_op = cal.launch_s_per_op if cal is not None and cal.launch_s_per_op is not None else steptime.LAUNCH_S_PER_OP
    kernels = _kernels(ctx, precision)
    if kernels is None:
        return 0.0, "; no launch term (no trace of the model and no transformer shape to count its kernels)"
    seconds = steptime.launch_s(kernels[0], seconds_per_op=per_op)
    return seconds, (f"; never below {steptime.format_duration(seconds)}, the host's kernel launches: {kernels[1]} "
                     f"× {per_op * 1e6:.3g} µs per op")


# Band of a prior (an architecture without published runs in the calibration): the held-out range, widened by half.
PRIOR_BAND_WIDENING = 1.5


def _calibrated(ctx: _Context, option: OptionPlan, flops: float, activation_bytes: float | None) -> _Micro | None:
    """The calibrated roofline (planner/engine/calibration.py) when a calibration, the activation bytes and a peak
    exist and the user typed no MFU; None otherwise (the default-MFU formula follows)."""
    cal, gpu, precision = ctx.inputs.calibration, option.gpu, option.precision
    if cal is None or ctx.model.mfu or activation_bytes is None:
        return None
    best: tuple[float, float, bool, str, float] | None = None
    for used in _NO_SLOWER_THAN[precision]:  # a faster format is never slower, as in the default formula
        peak = _transfer_peak(gpu, used)
        if not peak:
            continue
        t, eff, known = calibration.calibrated_fwd_bwd_s(cal, gpu, used, flops=flops, peak_tflops=peak,
                                                         activation_bytes=activation_bytes,
                                                         launch_s=_launch(ctx, used)[0])
        if best is None or t < best[0]:
            best = (t, eff, known, used, peak)
    if best is None:
        return None
    t, eff, known, used, peak = best
    group = calibration.arch_group(gpu)
    # An efficiency on a bound of the fit was not pinned by the runs (a reviewer found 5 of 6 there): say so and give
    # it the prior's wider range.
    at_bound = known and not (calibration.EFFICIENCY_BOUNDS[0] + 1e-3 < eff < calibration.EFFICIENCY_BOUNDS[1] - 1e-3)
    origin = (f"{group} fitted on {cal.counts.get(group, 0)} published runs"
              + (", at the fit's bound: the runs do not pin it, so its range is widened" if at_bound else "")
              if known else
              f"prior: no published run on {group} in the calibration; the 25th percentile of the fitted "
              "architectures")
    detail = (f"calibrated roofline F / (P × e × f) + {cal.activation_traffic:.3g} × A / BW: F = {flops:.3g} FLOPs "
              f"per micro-step, P = {peak:g} TFLOP/s dense {used}, e = {eff:.2f} ({origin}), "
              f"f = {cal.precision_factor.get(used, 1.0):.2f}, A = {activation_bytes / GIB:.3g} GiB of activations, "
              f"BW = {gpu.memory_bandwidth_gb_per_s:g} GB/s; calibration of {cal.fitted_on} on {cal.n_points} runs")
    if used == "fp32" and gpu.compute_capability in _DUAL_ISSUE_FP32_CC:
        detail += f"; P is × {DUAL_ISSUE_FP32_FACTOR:g} the dual-issue fp32 peak of this architecture"
    if used != precision:
        detail += f"; {precision} is assumed no slower than {used}"
    detail += _launch(ctx, used)[1]
    # Held-out errors e = predicted / published - 1 lie in [p10, p90], so the run lies in [t/(1+p90), t/(1+p10)].
    widen = 1.0 if known and not at_bound else PRIOR_BAND_WIDENING
    low = t / (1.0 + max(cal.residual_p90, 0.05) * widen)
    high = t / max(1.0 + min(cal.residual_p10, -0.05) * widen, 0.2)
    return _Micro(t, Source("analytic", detail), (low, high), None, False, band_meaning="p10-p90")


# A faster number format never makes a step slower: tf32 >= fp32, fp16/bf16 >= tf32 (cuDNN/cuBLAS pick the
# fastest kernel), so the analytic time takes the best of the precision and those below it.
_NO_SLOWER_THAN = {"fp32": ("fp32",), "tf32": ("tf32", "fp32"), "fp16": ("fp16", "tf32", "fp32"),
                   "bf16": ("bf16", "tf32", "fp32")}


# Ampere GA10x (8.6) and Ada (8.9) print an fp32 peak that counts both FP32 datapaths; one of them also
# executes the INT32 work (addressing) real kernels need, so they reach about half of it (NVIDIA GA102
# whitepaper, "2x FP32"). Planning assumption; a measurement on the card replaces it.
_DUAL_ISSUE_FP32_CC = ("8.6", "8.9")
DUAL_ISSUE_FP32_FACTOR = 0.5


def _transfer_band(ctx: _Context, t: float, ratio_band: tuple[float, float]) -> tuple[float, float]:
    """A transferred time's range: the p10-p90 of the transfer path's held-out errors on published runs (the
    calibration file) when there is one, else the peak/bandwidth ratio bracket (ESTIMATION.md §2)."""
    cal = ctx.inputs.calibration
    if cal is None or cal.transfer_residual_p10 is None or cal.transfer_residual_p90 is None:
        return ratio_band
    # errors e = predicted / published - 1 in [p10, p90]: the run lies in [t / (1 + p90), t / (1 + p10)]
    return (t / (1.0 + max(cal.transfer_residual_p90, 0.05)), t / max(1.0 + min(cal.transfer_residual_p10, -0.05),
                                                                     0.2))


def _transfer_peak(gpu: GpuProfile, precision: str) -> float | None:
    """The dense peak a transfer scales by: the dual-issue fp32 peak of Ampere GA10x/Ada counts at the same
    DUAL_ISSUE_FP32_FACTOR as in the analytic time, so fp32 transfers to and from them agree with it."""
    peak = gpu.peak_tflops_for(precision)
    if peak and precision == "fp32" and gpu.compute_capability in _DUAL_ISSUE_FP32_CC:
        return peak * DUAL_ISSUE_FP32_FACTOR
    return peak


def _default_mfu_on(gpu: GpuProfile, family: str, precision: str) -> float:
    mfu = steptime.default_mfu(family, precision)
    if precision == "fp32" and gpu.compute_capability in _DUAL_ISSUE_FP32_CC:
        mfu *= DUAL_ISSUE_FP32_FACTOR
    return mfu


def _analytic_seconds(model: ResolvedModel, gpu: GpuProfile, precision: str, flops: float) -> tuple[float, float, str]:
    best: tuple[float, float, str] | None = None
    for p in _NO_SLOWER_THAN[precision]:
        peak = gpu.peak_tflops_for(p)
        if not peak:
            continue
        mfu = model.mfu or _default_mfu_on(gpu, model.family, p)
        t = steptime.analytic_micro_step(flops, peak, mfu)
        if best is None or t < best[0]:
            best = (t, mfu, p)
    if best is None:  # a profile always has fp32 (inputs/profiles.py requires it)
        raise InputError(gpu.path, "peak_tflops.fp32", None, "the GPU's dense fp32 peak")
    return best


# fp16 and bf16 run on the same tensor cores at the same dense peak (NVIDIA Ampere and later, AMD CDNA2/3 datasheets,
# gpu_profiles/): where a GPU lists equal peaks, one's measured time stands for the other's (a GradScaler's unscale
# pass for fp16 is a few elementwise kernels). Never across different peaks, and never for fp32/tf32.
_SIBLINGS = {"fp16": "bf16", "bf16": "fp16"}


def _same_speed_precisions(gpu: GpuProfile, precision: str) -> tuple[str, ...]:
    sibling = _SIBLINGS.get(precision)
    peak, other = gpu.peak_tflops_for(precision), gpu.peak_tflops_for(sibling) if sibling else None
    return (precision, sibling) if sibling and peak and other and peak == other else (precision,)


def _sibling_reason(gpu: GpuProfile, precision: str, used: str) -> str:
    return (f"{precision} taken as {used}'s time: the same dense peak on {gpu.name} "
            f"({gpu.peak_tflops_for(precision):g} TFLOP/s)")


@dataclass(frozen=True)
class _Transfer:
    """One source GPU's transferred micro-step (steptime.transfer_micro_step) and what it rests on."""

    seconds: float
    ratio_band: tuple[float, float]
    weight: float
    detail: str
    optimizer_s: float | None
    used: tuple[TimePoint, ...]


def _transfer_from(ctx: _Context, option: OptionPlan, *, other: GpuProfile, precision: str, flops: float,
                   peak_b: float) -> _Transfer | None:
    gpu, idx = option.gpu, ctx.idx
    peak_a = _transfer_peak(other, precision)
    pts = idx.series_at(other.id, precision, option.micro_batch)
    src = steptime.measured_micro_step(pts, option.micro_batch) if pts is not None and peak_a else None
    if pts is None or not peak_a or not src:
        return None
    t_a, src_source, _band = src
    t0 = pts.line[0] if pts.line is not None else 0.0
    t_b, band = steptime.transfer_micro_step(
        t_a, t0_s=min(t0, t_a), flops_per_step=flops, peak_a_tflops=peak_a, peak_b_tflops=peak_b,
        bw_a_gb_s=other.memory_bandwidth_gb_per_s, bw_b_gb_s=gpu.memory_bandwidth_gb_per_s)
    opt_a = pts.optimizer_s
    opt_b = opt_a * other.memory_bandwidth_gb_per_s / gpu.memory_bandwidth_gb_per_s if opt_a else None
    weight = transfer_weight(peak_ratio=peak_a / peak_b,
                             bandwidth_ratio=other.memory_bandwidth_gb_per_s / gpu.memory_bandwidth_gb_per_s,
                             same_group=calibration.arch_group(other) == calibration.arch_group(gpu))
    return _Transfer(t_b, band, weight, f"{other.name} ({src_source.kind}: {src_source.detail})", opt_b,
                     steptime.points_used(pts, option.micro_batch))


def transfer_weight(*, peak_ratio: float, bandwidth_ratio: float, same_group: bool) -> float:
    """A source GPU's weight in the combined transfer: the closer its peak and bandwidth to the target's, the more
    (1 / (1 + |ln peak ratio| + |ln bandwidth ratio|)), twice as much within the target's architecture group.
    Independent of the micro-batch, so the combination keeps each source's monotonicity in it."""
    distance = abs(math.log(peak_ratio)) + abs(math.log(bandwidth_ratio))
    return (2.0 if same_group else 1.0) / (1.0 + distance)


def combined_seconds(values: Sequence[float], weights: Sequence[float]) -> float:
    """Weighted geometric mean: errors of a transfer are ratios, so sources combine in log space."""
    total = sum(weights)
    return math.exp(sum(w * math.log(v) for v, w in zip(values, weights, strict=True)) / total)


def _transferred(ctx: _Context, option: OptionPlan, flops: float, precision: str | None = None) -> _Micro | None:
    """Transfer measured (else published) times from other GPUs (ESTIMATION.md §2), at `precision` (default the
    option's; its same-speed sibling when the option's has no points anywhere): every GPU with points of the best
    kind (bench runs before published figures) gives a transferred time, combined by combined_seconds with
    transfer_weight; the detail names each source GPU and its weight."""
    gpu, idx = option.gpu, ctx.idx
    precision = precision or option.precision
    peak_b = _transfer_peak(gpu, precision)
    if not flops or not peak_b:
        return None
    published_only = all(idx.is_published(g, precision) for g in idx.gpus_with_times(precision) if g != gpu.id)
    sources: list[_Transfer] = []
    for other_id in sorted(idx.gpus_with_times(precision)):
        other = ctx.inputs.profiles.get(other_id)
        if other is None or other.id == gpu.id or (idx.is_published(other_id, precision) and not published_only):
            continue
        got = _transfer_from(ctx, option, other=other, precision=precision, flops=flops, peak_b=peak_b)
        if got is not None:
            sources.append(got)
    if not sources:
        return None
    weights = [s.weight for s in sources]
    t_b = combined_seconds([s.seconds for s in sources], weights)
    ratio_band = (combined_seconds([s.ratio_band[0] for s in sources], weights),
                  combined_seconds([s.ratio_band[1] for s in sources], weights))
    launch = _launch(ctx, precision)[0]  # a run of short kernels is bound by the host's launches on any GPU
    t_b = calibration.launch_bound_s(t_b, launch)
    ratio_band = (min(calibration.launch_bound_s(ratio_band[0], launch), t_b),
                  max(calibration.launch_bound_s(ratio_band[1], launch), t_b))
    band = _transfer_band(ctx, t_b, ratio_band)
    opts = [s.optimizer_s for s in sources if s.optimizer_s]
    share = sum(weights)
    detail = "from " + "; ".join(f"{s.detail}, weight {s.weight / share:.2f}" for s in sources) if len(sources) > 1 \
        else f"from {sources[0].detail}"
    if len(sources) > 1:
        detail = f"weighted geometric mean of {len(sources)} GPUs' transfers ({detail})"
    if precision != option.precision:
        detail = f"{_sibling_reason(gpu, option.precision, precision)}; {detail}"
    meaning = "p10-p90" if band != ratio_band else "assumed"
    used = tuple(p for s in sources for p in s.used)
    return _Micro(t_b, Source("transferred", detail), band, combined_seconds(opts, [1.0] * len(opts)) if opts else None,
                  True, used, band_meaning=meaning, precision_used=precision)


def _step(ctx: _Context, option: OptionPlan, activation_bytes: float | None = None, *,
          hardware: Hardware | None = None) -> tuple[StepEstimate, ScalingEstimate | None]:
    """One optimizer step: k micro-steps + the optimizer once + exposed communication (input overlapping), on
    `hardware` (default: the scenario's; billing_for's layout when the rental decides which links are crossed)."""
    scenario, gpu, n = ctx.scenario, option.gpu, option.n_gpus
    hardware = hardware or scenario.hardware
    m = _micro_step(ctx, option, activation_bytes)
    opt_s = m.optimizer_s
    if opt_s is None:
        opt_s = steptime.optimizer_step_s(ctx.trainable, scenario.training.optimizer,
                                          scenario.training.optimizer_impl, gpu.memory_bandwidth_gb_per_s)
    if ctx.work is not None and ctx.work.time_factor != 1.0:
        m = _padded_micro(m, ctx.work.time_factor, optimizer_s=opt_s)
    if m.includes_optimizer:  # the optimizer is part of the measured step: never more than half of it
        opt_s = min(opt_s, 0.5 * m.seconds)
    fwd_bwd_s = m.seconds - opt_s if m.includes_optimizer else m.seconds
    # ZeRO (any stage) shards the optimizer state, so each GPU updates 1/N of the parameters (ESTIMATION.md §2;
    # Rajbhandari et al. 2020): a one-GPU optimizer phase becomes 1/N of itself per step.
    shards = n if scenario.training.sharding != "none" and n > 1 else 1
    opt_one_gpu_s, opt_s = opt_s, opt_s / shards
    scale = None
    exposed = 0.0
    if n > 1:
        measured_ddp = scaling.select_measured_ddp(ctx.idx.ddp, gpu.id, n, hardware.gpus_per_node)
        scale = scaling.estimate_scaling(
            option, scenario.training, hardware, trainable_params=ctx.trainable,
            params=ctx.model.params, micro_step_s=fwd_bwd_s, optimizer_s=opt_s,
            measured_ddp=measured_ddp[1] if measured_ddp else None,
            measured_label=measured_ddp[0] if measured_ddp else "bench ddp result")
        exposed = scale.exposed_comm_s
    input_s = steptime.input_time_s(option.micro_batch, ctx.model.input_cpu_s_per_sample,
                                    scenario.hardware.cpu_workers_per_gpu)
    step = steptime.assemble_step(m.seconds, m.band, m.source, grad_accum=option.grad_accum, optimizer_s=opt_s,
                                  samples_per_step=scenario.training.global_batch, input_s=input_s,
                                  exposed_comm_s=exposed, optimizer_included=m.includes_optimizer,
                                  optimizer_in_micro_s=opt_one_gpu_s,
                                  # exposed communication is modelled on top of the held-out one-GPU errors
                                  band_meaning=m.band_meaning if exposed == 0.0 else "assumed",
                                  input_overlaps=scenario.hardware.cpu_workers_per_gpu > 0,
                                  notes=_noise_notes(ctx.idx, m.precision_used or option.precision, m.used))
    return step, scale


def _padded_micro(m: _Micro, factor: float, *, optimizer_s: float) -> _Micro:
    """A micro-step of rows padded below seq_len: forward+backward × F(p)/F(S) (planner/engine/sequences.py); an
    optimizer step inside a measured micro-step, and QLoRA's dequantisation, keep their time (they do not depend on
    the tokens in a row)."""
    inside = (min(optimizer_s, 0.5 * m.seconds) if m.includes_optimizer else 0.0) + m.fixed_s

    def scaled(t: float) -> float:
        return max(t - inside, 0.0) * factor + inside

    detail = f"{m.source.detail}; forward+backward × {factor:.3g} for rows padded below the sequence length"
    return replace(m, seconds=scaled(m.seconds), band=(scaled(m.band[0]), scaled(m.band[1])),
                   source=Source(m.source.kind, detail))


def _noise_notes(idx: MeasurementIndex, precision: str, used: Sequence[TimePoint]) -> list[Note]:
    """One note per noisy measurement the step time rests on (its per-step times varied by more than 10%)."""
    out = []
    for point in used:
        pct = idx.noisy_pct.get((point.label, precision, point.batch_size))
        if pct is not None:
            out.append(Note("noisy_measurement", file=point.label, iqr_pct=round(pct, 1)))
    return out


def _assumptions(scenario: Scenario, model: ResolvedModel, conv: ConvergenceEstimate,
                 idx: MeasurementIndex) -> list[Note]:
    out: list[Note] = [
        Note("assumption_model_flops", model=model.name, params=model.params, flops=f"{model.flops_per_sample:.3g}",
             source=str(model.flops_source)) if model.flops_per_sample else
        Note("assumption_model", model=model.name, params=model.params),
        Note("assumption_steps", steps=round(conv.steps), source=str(conv.source)),
        Note("assumption_memory_fit"),
        Note("assumption_layout", layout=scenario.training.state_layout, optimizer=scenario.training.optimizer,
             impl=scenario.training.optimizer_impl),
    ]
    if scenario.pricing.exchange_rate != 1.0 or scenario.pricing.currency != "USD":
        as_of = scenario.pricing.exchange_rate_as_of
        if as_of:
            out.append(Note("assumption_rate_dated", rate=scenario.pricing.exchange_rate,
                            currency=scenario.pricing.currency, as_of=as_of.isoformat()))
        else:
            out.append(Note("assumption_rate_undated", rate=scenario.pricing.exchange_rate,
                            currency=scenario.pricing.currency))
    out.append(Note("energy_assumption", pct=round(100 * cost.tdp_fraction(scenario.pricing))))
    if scenario.model.name and canonical_id(scenario.model.name)[0] != scenario.model.name:
        out.append(Note("model_renamed", old=scenario.model.name, new=model.name))
    out.extend(conv.notes)
    out.extend(idx.skipped)
    return out


def lr_reference_batch(scenario: Scenario) -> int | None:
    """The batch the LR was tuned at: training.lr_reference_batch, else the reference run nearest the global batch."""
    t, w = scenario.training, scenario.workload
    if t.lr_reference_batch:
        return t.lr_reference_batch
    batches = [p.global_batch for p in w.reference_points]
    return min(batches, key=lambda b: (abs(math.log(b / t.global_batch)), b)) if batches else None


def _batch_advice(scenario: Scenario, conv: ConvergenceEstimate, rows_per_epoch: int | None) -> tuple[Note, ...]:
    """The seeds' checklist when the batch moves from where the LR was tuned: the LR rule, its warm-up, the
    noise-scale optimum, and the critical-batch warning (convergence.lr_advice; ESTIMATION.md §4)."""
    t = scenario.training
    ref = lr_reference_batch(scenario)
    out: list[Note] = []
    if ref is not None and ref != t.global_batch:
        out.extend(convergence.lr_advice(t.optimizer, ref, t.global_batch, conv.b_crit,
                                         samples_per_epoch=rows_per_epoch))
    out.extend(n for n in conv.notes if n.key == "past_b_crit")
    return tuple(out)


def _plan_warnings(scenario: Scenario, options: Sequence[PlanOption], today: dt.date) -> list[Note | str]:
    out: list[Note | str] = []
    w = cost.undated_rate_warning(scenario.pricing)
    if w:
        out.append(w)
    if options and not any(o.fits for o in options):
        out.append(Note("no_option_fits_known") if any(o.fits is None for o in options) else Note("no_option_fits"))
    return out
