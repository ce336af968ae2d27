"""The formula paths of a micro-step's time, used when no GPU has a measurement of it: the calibrated roofline
(planner/engine/calibration.py), else F / (P × MFU) with the default MFU; both floored by the host's kernel launches
and, for QLoRA, plus the base weights' dequantisation."""

from __future__ import annotations

from dataclasses import replace

from planner.engine import calibration, memory, steptime
from planner.engine.context import trainable_fraction
from planner.engine.estimates import Micro, ResolvedModel, Source, detail
from planner.engine.micro import MicroContext
from planner.engine.notes import Note
from planner.engine.option import OptionPlan
from planner.engine.physics_bounds import DUAL_ISSUE_FP32_CC, DUAL_ISSUE_FP32_FACTOR, transfer_peak
from planner.inputs.errors import InputError
from planner.inputs.profiles import GpuProfile
from planner.vocab import GIB


def with_dequant(ctx: MicroContext, option: OptionPlan, m: Micro) -> Micro:
    """A formula time plus QLoRA's dequantisation (steptime.dequant_s); measured and transferred times come from runs
    of the same adapter (measurements.py matches it), so they already hold it."""
    adapter = ctx.training.adapter
    if adapter is None or adapter.base_dtype not in ("nf4", "nf4_dq"):
        return m
    quantized = memory.quantized_base_params(ctx.model)
    extra = steptime.dequant_s(quantized, option.gpu.memory_bandwidth_gb_per_s)
    how = detail("dequant", duration=extra, passes=steptime.DEQUANT_PASSES, params=quantized,
                 bytes=steptime.QLORA_DEQUANT_BYTES_PER_PARAM_PASS, bw=option.gpu.memory_bandwidth_gb_per_s)
    low, high = m.band
    return replace(m, seconds=m.seconds + extra, source=m.source.plus(how), band=(low + extra, high + extra),
                   fixed_s=m.fixed_s + extra)


def default_mfu_micro(ctx: MicroContext, option: OptionPlan, flops: float) -> Micro:
    """F / (P × MFU) with the default (or the typed) MFU: the path without a calibration or an activation size."""
    model, gpu, precision = ctx.model, option.gpu, option.precision
    t, mfu, used = _analytic_seconds(model, gpu, precision, flops)
    if model.mfu:
        origin = detail("mfu_yours")
    elif used == "fp32" and gpu.compute_capability in DUAL_ISSUE_FP32_CC:
        origin = detail("mfu_default_dual", family=model.family, precision=used, factor=DUAL_ISSUE_FP32_FACTOR)
    else:
        origin = detail("mfu_default", family=model.family, precision=used)
    parts = [detail("mfu", flops=flops, peak=gpu.peak_tflops_for(used), precision=used, mfu=mfu, origin=origin)]
    if gpu.sustained is not None and not model.mfu:  # _analytic_seconds divided by the sustained share of P
        parts.append(sustained_part(gpu))
    if used != precision:
        parts.append(detail("no_slower", precision=precision, used=used))
    launch, launch_part = launch_floor(ctx, precision)
    t = calibration.launch_bound_s(t, launch)
    return Micro(t, Source("user" if model.mfu else "analytic", parts=(*parts, launch_part)), (0.6 * t, 1.6 * t),
                 None, False)


def kernel_count(ctx: MicroContext, precision: str) -> tuple[float, Note] | None:
    """Kernel launches of one micro-step (forward + backward) and where the count comes from: the model's trace,
    else per layer for a typed transformer shape (steptime.transformer_aten_ops); None when neither exists."""
    traced = ctx.idx.aten_ops.get(precision)
    if traced is not None:
        return traced[0], detail("aten_traced", n=traced[0], files=traced[2])
    shape = ctx.model.transformer
    if shape is None:
        return None
    # recompute and frozen weights change the op count as they change the FLOPs (same op mix per layer)
    factor = steptime.compute_factor(ctx.training.activation_checkpointing,
                                     trainable_fraction(ctx.model, ctx.training))
    n = steptime.transformer_aten_ops(shape.layers, precision) * factor
    return n, detail("aten_estimated", n=n, layers=shape.layers)


def launch_floor(ctx: MicroContext, precision: str) -> tuple[float, Note]:
    """(seconds, the part that says so) of the launch floor kernels × launch cost (0 when the kernel count is
    unknown). Worked out once per context and precision (micro.Kept)."""
    kept = ctx.kept.launch_floors
    got = kept.get(precision)
    if got is None:
        got = kept[precision] = _launch_floor(ctx, precision)
    return got


def _launch_floor(ctx: MicroContext, precision: str) -> tuple[float, Note]:
    cal = ctx.inputs.calibration
    per_op = cal.launch_s_per_op if cal is not None and cal.launch_s_per_op is not None else steptime.LAUNCH_S_PER_OP
    kernels = kernel_count(ctx, precision)
    if kernels is None:
        return 0.0, detail("no_launch")
    seconds = steptime.launch_s(kernels[0], seconds_per_op=per_op)
    return seconds, detail("launch_floor", duration=seconds, kernels=kernels[1], us=per_op * 1e6)


# Band of a prior (an architecture without published runs in the calibration): the held-out range, widened by half.
PRIOR_BAND_WIDENING = 1.5


def calibrated(ctx: MicroContext, option: OptionPlan, flops: float, activation_bytes: float | None) -> Micro | None:
    """The calibrated roofline (planner/engine/calibration.py) when a calibration, the activation bytes and a peak
    exist and the user typed no MFU; None otherwise (the default-MFU formula follows)."""
    cal, gpu, precision = ctx.inputs.calibration, option.gpu, option.precision
    if cal is None or ctx.model.mfu or activation_bytes is None:
        return None
    best: tuple[float, float, bool, str, float] | None = None
    for used in NO_SLOWER_THAN[precision]:  # a faster format is never slower, as in the default formula
        peak = transfer_peak(gpu, used)
        if not peak:
            continue
        t, eff, known = calibration.calibrated_fwd_bwd_s(cal, gpu, used, flops=flops, peak_tflops=peak,
                                                         activation_bytes=activation_bytes,
                                                         launch_s=launch_floor(ctx, used)[0])
        if best is None or t < best[0]:
            best = (t, eff, known, used, peak)
    if best is None:
        return None
    t, eff, known, used, peak = best
    group = calibration.arch_group(gpu)
    # An efficiency on a bound of the fit was not pinned by the runs (a reviewer found 5 of 6 there): say so and give
    # it the prior's wider range.
    at_bound = known and not (calibration.EFFICIENCY_BOUNDS[0] + 1e-3 < eff < calibration.EFFICIENCY_BOUNDS[1] - 1e-3)
    origin: tuple[Note, ...] = (
        (detail("fitted_on_bound" if at_bound else "fitted_on", group=group, n=cal.counts.get(group, 0)),) if known
        else (detail("prior_group", group=group), detail("percentile")))
    parts = [detail("roofline", traffic=cal.activation_traffic, flops=flops, peak=peak, precision=used, eff=eff,
                    origin=origin, f=cal.precision_factor.get(used, 1.0), a=activation_bytes / GIB,
                    bw=gpu.memory_bandwidth_gb_per_s),
             detail("calibration", date=cal.fitted_on, n=cal.n_points)]
    if used == "fp32" and gpu.compute_capability in DUAL_ISSUE_FP32_CC:
        parts.append(detail("dual_issue", factor=DUAL_ISSUE_FP32_FACTOR))
    if gpu.sustained is not None:
        parts.append(sustained_part(gpu))
    if used != precision:
        parts.append(detail("no_slower", precision=precision, used=used))
    parts.append(launch_floor(ctx, used)[1])
    # Held-out errors e = predicted / published - 1 lie in [p10, p90], so the run lies in [t/(1+p90), t/(1+p10)].
    widen = 1.0 if known and not at_bound else PRIOR_BAND_WIDENING
    low = t / (1.0 + max(cal.residual_p90, 0.05) * widen)
    high = t / max(1.0 + min(cal.residual_p10, -0.05) * widen, 0.2)
    return Micro(t, Source("analytic", parts=tuple(parts)), (low, high), None, False, band_meaning="p10-p90")


# A faster number format never makes a step slower: tf32 >= fp32, fp16/bf16 >= tf32 (cuDNN/cuBLAS pick the
# fastest kernel), so the analytic time takes the best of the precision and those below it.
NO_SLOWER_THAN = {"fp32": ("fp32",), "tf32": ("tf32", "fp32"), "fp16": ("fp16", "tf32", "fp32"),
                   "bf16": ("bf16", "tf32", "fp32")}


def sustained_part(gpu: GpuProfile) -> Note:
    """The source part that says P is the share of the datasheet peak a power-limited card sustains."""
    assert gpu.sustained is not None
    return detail("sustained", fraction=gpu.sustained.fraction, tdp=gpu.tdp_w, source=gpu.sustained.source)


def _default_mfu_on(gpu: GpuProfile, family: str, precision: str) -> float:
    mfu = steptime.default_mfu(family, precision)
    if precision == "fp32" and gpu.compute_capability in DUAL_ISSUE_FP32_CC:
        mfu *= DUAL_ISSUE_FP32_FACTOR
    return mfu


def _analytic_seconds(model: ResolvedModel, gpu: GpuProfile, precision: str, flops: float) -> tuple[float, float, str]:
    best: tuple[float, float, str] | None = None
    for p in NO_SLOWER_THAN[precision]:
        peak = gpu.peak_tflops_for(p)
        if not peak:
            continue
        if gpu.sustained is not None and not model.mfu:  # a typed MFU is of the datasheet peak, as the user's log
            peak *= gpu.sustained.fraction
        mfu = model.mfu or _default_mfu_on(gpu, model.family, p)
        t = steptime.analytic_micro_step(flops, peak, mfu)
        if best is None or t < best[0]:
            best = (t, mfu, p)
    if best is None:  # a profile always has fp32 (inputs/profiles.py requires it)
        raise InputError(gpu.path, "peak_tflops.fp32", None, "the GPU's dense fp32 peak")
    return best


