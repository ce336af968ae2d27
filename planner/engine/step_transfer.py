"""A micro-step's time transferred from other GPUs' measurements (docs/methods.md#step-time), and the same-speed 16-bit
sibling a precision may take its time from."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from planner.engine import calibration, steptime
from planner.engine.estimates import Micro, Source, TimePoint, detail
from planner.engine.micro import MicroContext, TransferSource
from planner.engine.notes import Note
from planner.engine.option import OptionPlan
from planner.engine.physics_bounds import transfer_peak
from planner.engine.step_formula import launch_floor, sustained_part
from planner.inputs.profiles import GpuProfile


def _transfer_band(ctx: MicroContext, t: float, ratio_band: tuple[float, float]) -> tuple[float, float]:
    """A transferred time's range: the p10-p90 of the transfer path's held-out errors on published runs (the
    calibration file) when there is one, else the peak/bandwidth ratio bracket (docs/methods.md#step-time)."""
    cal = ctx.inputs.calibration
    if cal is None or cal.transfer_residual_p10 is None or cal.transfer_residual_p90 is None:
        return ratio_band
    # errors e = predicted / published - 1 in [p10, p90]: the run lies in [t / (1 + p90), t / (1 + p10)]
    return (t / (1.0 + max(cal.transfer_residual_p90, 0.05)), t / max(1.0 + min(cal.transfer_residual_p10, -0.05),
                                                                     0.2))


# fp16 and bf16 run on the same tensor cores at the same dense peak (NVIDIA Ampere and later, AMD CDNA2/3 datasheets,
# gpu_profiles/): where a GPU lists equal peaks, one's measured time stands for the other's (a GradScaler's unscale
# pass for fp16 is a few elementwise kernels). Never across different peaks, and never for fp32/tf32.
_SIBLINGS = {"fp16": "bf16", "bf16": "fp16"}


def same_speed_precisions(gpu: GpuProfile, precision: str) -> tuple[str, ...]:
    sibling = _SIBLINGS.get(precision)
    peak, other = gpu.peak_tflops_for(precision), gpu.peak_tflops_for(sibling) if sibling else None
    return (precision, sibling) if sibling and peak and other and peak == other else (precision,)


def sibling_reason(gpu: GpuProfile, precision: str, used: str) -> Note:
    return detail("sibling", precision=precision, used=used, gpu=gpu.name, tflops=gpu.peak_tflops_for(precision))


@dataclass(frozen=True)
class _Transfer:
    """One source GPU's transferred micro-step (steptime.transfer_micro_step) and what it rests on."""

    seconds: float
    ratio_band: tuple[float, float]
    weight: float
    gpu_name: str  # the source GPU
    source: Source  # how its own time was obtained
    optimizer_s: float | None
    used: tuple[TimePoint, ...]
    aligned: Note | None = None  # its source moved to the reference source's level (MeasurementIndex.alignment)


def _transfer_source(ctx: MicroContext, other: GpuProfile, precision: str, micro_batch: int) -> TransferSource | None:
    """GPU `other`'s own time at `micro_batch` as a transfer reads it (None: no points or no peak there). What stays
    unscaled is the host's part only: the t(b) fit's intercept, without the optimizer, and never more than the
    model's launch floor (an intercept fitted across runs of different software holds GPU work too, which a faster
    GPU does faster)."""
    kept = ctx.kept.transfer_sources
    key = (other.id, precision, micro_batch)
    if key not in kept:
        kept[key] = _work_out_source(ctx, other, precision, micro_batch)
    return kept[key]


def _work_out_source(ctx: MicroContext, other: GpuProfile, precision: str, micro_batch: int) -> TransferSource | None:
    idx = ctx.idx
    peak_a = transfer_peak(other, precision)
    pts = idx.series_at(other.id, precision, micro_batch)
    got = None
    if pts is not None and peak_a:
        inside_a = pts.optimizer_s or ctx.optimizer_s(other.memory_bandwidth_gb_per_s)
        src = steptime.measured_micro_step(pts, micro_batch, optimizer_s=inside_a)
        if src:
            t_a, src_source, _band = src
            opt_a = min(inside_a, 0.5 * t_a)
            fwd_bwd_a = t_a - opt_a
            # another source's figure at the reference source's level (MeasurementIndex.alignment)
            first = pts.points[0] if pts.points else None
            k, reference, shared = idx.alignment(first.source, precision) if first and first.kind == "published" \
                else (1.0, None, 0)
            aligned = None
            if reference is not None and abs(k - 1.0) > 0.01:
                fwd_bwd_a *= k
                aligned = detail("aligned", source=first.source if first else "", reference=reference, factor=k,
                                 n=shared)
            intercept = max((pts.line[0] if pts.line is not None else 0.0) - opt_a, 0.0)
            t0 = min(intercept, launch_floor(ctx, precision)[0], fwd_bwd_a)
            got = TransferSource(peak_a, fwd_bwd_a, opt_a, t0, src_source, steptime.points_used(pts, micro_batch),
                                 aligned)
    return got


def _transfer_from(ctx: MicroContext, option: OptionPlan, *, other: GpuProfile, precision: str, flops: float,
                   peak_b: float) -> _Transfer | None:
    """GPU `other`'s time at the option's micro-batch (_transfer_source) moved to the option's GPU
    (docs/methods.md#step-time): its forward + backward by steptime.transfer_micro_step, the optimizer step inside
    it by the bandwidth ratio (it streams the optimizer state)."""
    gpu = option.gpu
    got = _transfer_source(ctx, other, precision, option.micro_batch)
    if got is None:
        return None
    bw_a, bw_b = other.memory_bandwidth_gb_per_s, gpu.memory_bandwidth_gb_per_s
    fwd_bwd_b, (low, high) = steptime.transfer_micro_step(
        got.fwd_bwd_s, t0_s=got.t0_s, flops_per_step=flops, peak_a_tflops=got.peak_tflops, peak_b_tflops=peak_b,
        bw_a_gb_s=bw_a, bw_b_gb_s=bw_b)
    opt_b = got.optimizer_s * bw_a / bw_b
    weight = transfer_weight(peak_ratio=got.peak_tflops / peak_b, bandwidth_ratio=bw_a / bw_b,
                             same_group=calibration.arch_group(other) == calibration.arch_group(gpu))
    return _Transfer(fwd_bwd_b + opt_b, (low + opt_b, high + opt_b), weight, other.name, got.source, opt_b,
                     got.used, got.aligned)


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


def transferred(ctx: MicroContext, option: OptionPlan, flops: float, precision: str | None = None) -> Micro | None:
    """Transfer measured (else published) times from other GPUs (docs/methods.md#step-time), at `precision` (default the
    option's; its same-speed sibling when the option's has no points anywhere): every GPU with points of the best
    kind (bench runs before published figures) gives a transferred time, combined by combined_seconds with
    transfer_weight; the detail names each source GPU and its weight."""
    gpu, idx = option.gpu, ctx.idx
    precision = precision or option.precision
    peak_b = transfer_peak(gpu, precision)
    if not flops or not peak_b:
        return None
    with_times = ctx.kept.transfer_gpus.get(precision)
    if with_times is None:  # the same for every option of the context: (GPU id, published figures only), by id
        with_times = ctx.kept.transfer_gpus[precision] = tuple(
            (g, idx.is_published(g, precision)) for g in sorted(idx.gpus_with_times(precision)))
    published_only = all(published for g, published in with_times if g != gpu.id)
    sources: list[_Transfer] = []
    for other_id, published in with_times:
        other = ctx.inputs.profiles.get(other_id)
        if other is None or other.id == gpu.id or (published and not published_only):
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
    launch = launch_floor(ctx, precision)[0]  # a run of short kernels is bound by the host's launches on any GPU
    t_b = calibration.launch_bound_s(t_b, launch)
    ratio_band = (min(calibration.launch_bound_s(ratio_band[0], launch), t_b),
                  max(calibration.launch_bound_s(ratio_band[1], launch), t_b))
    band = _transfer_band(ctx, t_b, ratio_band)
    opts = [s.optimizer_s for s in sources if s.optimizer_s]
    share = sum(weights)
    if len(sources) > 1:
        weighted = tuple(detail("weighted_first" if i == 0 else "weighted", gpu=s.gpu_name, source=s.source,
                                weight=s.weight / share) for i, s in enumerate(sources))
        parts: tuple[Note, ...] = (detail("geomean", n=len(sources), detail=weighted),)
    else:
        parts = (detail("transferred", gpu=sources[0].gpu_name, source=sources[0].source),)
    if precision != option.precision:
        parts = (sibling_reason(gpu, option.precision, precision), *parts)
    parts = (*parts, *dict.fromkeys(s.aligned for s in sources if s.aligned is not None),
             *((sustained_part(gpu),) if gpu.sustained is not None else ()))
    meaning = "p10-p90" if band != ratio_band else "assumed"
    used = tuple(p for s in sources for p in s.used)
    return Micro(t_b, Source("transferred", parts=parts), band,
                 combined_seconds(opts, [1.0] * len(opts)) if opts else None,
                  True, used, band_meaning=meaning, precision_used=precision)


