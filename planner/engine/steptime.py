"""Step time of one GPU: measured, interpolated, transferred or analytic micro-steps, assembled into a step."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from planner.engine.estimates import Source, StepEstimate, TimePoint, detail
from planner.engine.fit import least_squares_line
from planner.engine.notes import Note
from planner.inputs.errors import FitError
from planner.vocab import PRECISIONS, PrecisionGroup, precision_group

# ---------------------------------------------------------------- constants (editable; each with its source)

# η, the achievable fraction of dense peak for the matmul-bound part (docs/methods.md#step-time). Measured best-shape bf16
# matmuls reach 78-87% of peak (ml-engineering MAMF table, reference/gpu_reference.md: A100 SXM 271/312,
# H100 SXM 795/989, B200 1745/2250); 0.75 leaves room for shapes that are not the best.
ETA = 0.75

# The optimizer phase streams its tensors at this fraction of the memory bandwidth (docs/methods.md#step-time:
# "bytes/(0.8·BW)"; elementwise kernels typically reach ~80% of datasheet bandwidth).
OPTIMIZER_BANDWIDTH_FRACTION = 0.8

# DRAM bytes moved per trainable fp32 parameter by one optimizer step, counted pass by pass over torch's
# implementations (4 B per fp32 tensor read or written; R = read, W = write):
# - AdamW foreach (torch.optim._multi_tensor_adam, decoupled decay): mul_(p) 8, lerp_(m, g) 12, mul_(v) 8,
#   addcmul_(v, g, g) 12, sqrt(v) -> tmp 8, div_(tmp) 8, add_(tmp, eps) 8, addcdiv_(p, m, tmp) 16 = 80
#   (docs/methods.md#step-time: ≈ 80).
# - Adam foreach: the same without the decoupled-decay mul_(p) (torch's default weight_decay=0) = 72.
# - Adam/AdamW fused: one kernel, R p g m v + W p m v = 7 × 4 = 28 (docs/methods.md#step-time: ≈ 28).
# - SGD (no momentum, weight_decay=0), foreach or fused: add_(p, g) = R p g + W p = 12.
# - SGD+momentum foreach (torch.optim._multi_tensor_sgd) with weight decay, as in the usual ImageNet recipe
#   (Goyal et al. 2017, wd 1e-4): add(g, p) -> g' 12, mul_(buf) 8, add_(buf, g') 12, add_(p, buf) 12 = 44.
# - SGD+momentum fused: R p g buf + W p buf = 20.
# - Adafactor (torch.optim.Adafactor; no fused variant, so "fused" counts as foreach): two row/column norms
#   of g 8, outer product row·col -> var 4, div_(var) 8, clamp_ 8, rsqrt_ 8, mul_(update, g) 12,
#   norm(update) 4, add_(p, update) 12 = 64 (factored statistics themselves are negligible).
# - 8-bit Adam (bitsandbytes blockwise, always one fused kernel): R p g (4+4) + m v (1+1), W p (4) + m v (1+1)
#   = 16; per-block absmax constants are negligible.
OPTIMIZER_BYTES_PER_PARAM = {
    ("adamw", "foreach"): 80.0,
    ("adamw", "fused"): 28.0,
    ("adam", "foreach"): 72.0,
    ("adam", "fused"): 28.0,
    ("sgd", "foreach"): 12.0,
    ("sgd", "fused"): 12.0,
    ("sgd_momentum", "foreach"): 44.0,
    ("sgd_momentum", "fused"): 20.0,
    ("adafactor", "foreach"): 64.0,
    ("adafactor", "fused"): 64.0,
    ("adam8bit", "foreach"): 16.0,
    ("adam8bit", "fused"): 16.0,
}
# A per-parameter loop moves the same bytes as the multi-tensor one (it runs the same element-wise ops, tensor by
# tensor; its extra cost is kernel launches, not traffic).
OPTIMIZER_BYTES_PER_PARAM.update({(opt, "for_loop"): OPTIMIZER_BYTES_PER_PARAM[(opt, "foreach")]
                                  for opt, impl in list(OPTIMIZER_BYTES_PER_PARAM) if impl == "foreach"})

# QLoRA: bitsandbytes dequantises each 4-bit (nf4) base weight to bf16 before its matmul, in the forward and again
# in the backward (for the input gradient): DEQUANT_PASSES per micro-step. The cost per quantized parameter and pass,
# as bytes of DRAM traffic at the profile's bandwidth, is taken from LitGPT's published pair (calibration/published,
# Lightning-AI/litgpt@2685705:tutorials/resource-tables.md#L53-L54, A100-SXM4-40GB, Llama 2 7B, micro-batch 1):
# LoRA 2.36 vs QLoRA nf4 3.68 min per 1,000 iterations = +79.2 ms per iteration over 2 passes × 6,476,271,616
# quantized parameters (all but the embedding and head) at 1,555 GB/s = 9.5 B. The traffic alone (read 0.5 B + the
# block constants, write 2 B) would be 2.6 B: the rest is the dequantisation kernels' own cost at a small batch.
# One published pair, so a planning assumption (said in the source); nf4-dq (double quantisation) took 4% longer.
QLORA_DEQUANT_BYTES_PER_PARAM_PASS = 9.5
DEQUANT_PASSES = 2


def dequant_s(quantized_params: int, bandwidth_gb_s: float) -> float:
    """Seconds a QLoRA micro-step spends dequantising its nf4 base weights (forward + backward)."""
    return DEQUANT_PASSES * quantized_params * QLORA_DEQUANT_BYTES_PER_PARAM_PASS / (bandwidth_gb_s * 1e9)


# Host-side cost of one eager PyTorch op that launches a kernel (Python, the ATen dispatcher, cudaLaunchKernel). Cited:
# "~5–25 µs of CPU-side work per op" (jiahuanglin.xyz, "From PyTorch op to kernel launch", lesson 18 of GPU kernel
# serving, its dispatch-chain table), "This process takes about 4-6 μs" per kernel submission (susun-blog.com,
# "pegainfer (3): From Launch Overhead to CUDA Graph", RTX 5070 Ti, CUDA 13.0). The low end of the first range, as a
# floor: a step of short kernels cannot run faster than the host launches them. "Kernels" are the traced aten ops
# that launch one (bench/trace_core.py launches_kernel: views and bare allocations left out, a foreach op once).
LAUNCH_S_PER_OP = 5e-6

# Kernel-launching aten ops of one forward + backward of a transformer with typed shapes: fixed + per_layer × layers,
# read off the shipped traces (results/traced/*-20261202T*.json, bench trace, torch 2.13, SDPA attention). Each pair
# of depths gives the per-layer count by difference and the fixed part (embeddings, final norm, head, loss) by
# intercept; the two pairs are averaged (16-bit autocast adds its casts):
#   fp32/tf32: GPT-2 393 (12 layers) / GPT-2 medium 765 (24) -> 31 per layer + 21; BERT-base 518 / BERT-large 998
#   -> 40 + 38; mean 35.5 + 29.5.
#   bf16:      GPT-2 663 / 1,299 -> 53 + 27; BERT 940 / 1,828 -> 74 + 52; mean 63.5 + 39.5.
TRANSFORMER_OPS: dict[PrecisionGroup, tuple[float, float]] = {"fp32": (29.5, 35.5), "16-bit": (39.5, 63.5)}


def transformer_aten_ops(layers: int, precision: str) -> float:
    """Traced-equivalent aten ops of one forward+backward of a `layers`-layer transformer (TRANSFORMER_OPS)."""
    fixed, per_layer = TRANSFORMER_OPS[precision_group(precision)]
    return fixed + per_layer * layers


def launch_s(kernels: float, *, seconds_per_op: float = LAUNCH_S_PER_OP) -> float:
    """Seconds the host takes to launch one micro-step's kernels: kernels × the per-op launch cost (docs/methods.md#step-time);
    the analytic micro-step is never shorter (calibration.launch_bound_s)."""
    if kernels < 0 or seconds_per_op < 0:
        raise ValueError(f"need kernels >= 0 and seconds_per_op >= 0 (got {kernels}, {seconds_per_op})")
    return kernels * seconds_per_op


# Default model-FLOPs utilisation for analytic step times, by family and precision (shown as an assumption).
# Derived from published throughputs with F = model FLOPs (2 per multiply-add):
# - cnn: NVIDIA DeepLearningExamples, PyTorch ResNet-50 v1.5 README (1 GPU, 2.46e10 FLOPs/sample):
#   A100 AMP 2470 img/s -> 0.19 of 312; A100 TF32 938 img/s -> 0.15 of 156; V100 AMP 1200 img/s -> 0.24 of
#   125; V100 FP32 367 img/s -> 0.57 of the 15.7 CUDA-core peak.
# - decoder/encoder: nanoGPT GPT-2 124M, README "4 days on 8×A100" -> ≈ 0.29 of bf16 peak (worked out in
#   karpathy/nanoGPT issue #182; a 4090 user reports 0.29); PaLM (Chowdhery et al. 2022, Table 3) reaches 0.46
#   at 540B scale, GPT-3 0.21: 0.30 is the small-team figure.
# - vit, rnn, mlp, custom: assumptions, lower than the above (more memory-bound or launch-bound work).
# fp32 is a CUDA-core rate: it is so much lower than the tensor rates that the same model reaches a LARGER
# fraction of it (the V100 FP32 ResNet-50 figure above), so the fp32 column is higher, not lower. tf32 keeps
# fp32 activations (twice the bytes of 16-bit) against half the 16-bit peak, so it sits a little below fp16/bf16.
DEFAULT_MFU = {
    #            fp32   tf32   fp16   bf16
    "cnn":      (0.55, 0.15, 0.20, 0.20),
    "vit":      (0.45, 0.20, 0.25, 0.25),
    "encoder":  (0.45, 0.25, 0.30, 0.30),
    "decoder":  (0.45, 0.25, 0.30, 0.30),
    "rnn":      (0.25, 0.08, 0.10, 0.10),
    "mlp":      (0.30, 0.12, 0.15, 0.15),
    "custom":   (0.30, 0.12, 0.15, 0.15),
}

# Measured/fitted step-time bands (assumptions; measured files carry their own p10/p90 for the GPU that ran).
MEASURED_BAND = 0.03  # another machine of the same type: clocks, thermals, driver (a few percent)
INTERPOLATION_LIMIT = 1.25  # docs/methods.md#step-time: beyond 1.25x the largest measured batch it is "extrapolated"
INTERPOLATED_BAND_MIN = 0.05  # at least ±5%, more when the fit residuals are larger
EXTRAPOLATED_BAND_MIN = 0.15  # at least ±15% just past the limit, growing with the distance
SINGLE_POINT_BAND = 0.15  # margin around the [fixed-overhead, proportional] bracket of a one-point scaling
LOADING_BAND = 0.10  # an input-bound step's range: up to 10% above the typed per-sample CPU time (assumption)
# Prior for one measured or published batch (no t(b) fit): the per-step work that does not grow with the batch
# (kernel launches, the optimizer step, synchronisation) is at most this share of the step at that batch.
# Assumption, sized from ResNet-50 on an A100 at 256 per GPU (~160 convolutions × ~3 kernels × ~5 µs launches
# + a 25.6M-parameter SGD step at 44 B/param over 1.5 TB/s ≈ 3 ms of a ~100 ms step, i.e. ~3%) with a wide margin
# for smaller batches and models; the step-time model's fitted launch cost replaces it.
SINGLE_POINT_FIXED_SHARE_MAX = 0.25


# ---------------------------------------------------------------- FLOPs

def flops_per_step(flops_per_sample: float, micro_batch: int) -> float:
    """Model FLOPs of one micro-step (forward + backward) = F_sample × b."""
    return flops_per_sample * micro_batch


def compute_factor(checkpointing: bool, frozen_fraction_trainable: float) -> float:
    """Compute relative to forward+backward = 3 forward units (docs/methods.md#step-time).

    `frozen_fraction_trainable` is f_T = T/Ψ, the TRAINABLE fraction (1.0 = nothing frozen): frozen weights get no
    weight gradients, so backward ≈ (1 + f_T) forward instead of 2. Activation checkpointing recomputes one
    forward. Units add: (1 + [recompute 1] + (1 + f_T)) / 3; e.g. both: (3 + f_T)/3, plain checkpointing 4/3.
    """
    if not 0.0 <= frozen_fraction_trainable <= 1.0:
        raise ValueError(f"trainable fraction f_T must be in [0, 1], got {frozen_fraction_trainable}")
    forward_units = 1.0 + (1.0 if checkpointing else 0.0)
    backward_units = 1.0 + frozen_fraction_trainable
    return (forward_units + backward_units) / 3.0


# ---------------------------------------------------------------- measured and fitted micro-steps

def fit_time_line(points: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares t(b) = t0 + c·b over (batch, seconds) points; returns (t0_s, c_s_per_sample). O(n).

    The intercept is the launch-bound floor, so it cannot be negative: a negative least-squares t0 is replaced by
    the fit through the origin, c = Σ b·t / Σ b². One distinct batch gives t0 = 0 (proportional). A negative
    slope (noise) gives c = 0, t0 = mean t.
    """
    if not points:
        raise ValueError("fit_time_line needs at least one (batch, seconds) point")
    bs = [float(b) for b, _ in points]
    ts = [float(t) for _, t in points]
    n = len(points)
    mean_t = sum(ts) / n
    try:
        t0, c = least_squares_line(list(zip(bs, ts, strict=True)))
    except FitError:  # one distinct batch
        return 0.0, mean_t / (sum(bs) / n)
    if c < 0.0:
        return mean_t, 0.0
    if t0 < 0.0:
        return 0.0, sum(b * t for b, t in zip(bs, ts, strict=True)) / sum(b * b for b in bs)
    return t0, c


def _max_relative_residual(points: Sequence[tuple[int, float]], t0: float, c: float) -> float:
    return max(abs(t - (t0 + c * b)) / (t0 + c * b) for b, t in points)


def _band(t: float, half_width: float) -> tuple[float, float]:
    """Multiplicative ±h band, t/(1+h) .. t·(1+h): stays positive however wide it grows."""
    return t / (1.0 + half_width), t * (1.0 + half_width)


def _labels(points: Sequence[TimePoint]) -> str:
    return ", ".join(dict.fromkeys(p.label for p in points))


def _origin(points: Sequence[TimePoint]) -> str:
    """'published' when every point is a published figure, else 'measured' (a bench run)."""
    return "published" if points and all(p.kind == "published" for p in points) else "measured"


@dataclass(frozen=True)
class TimeSeries:
    """One GPU and precision's measured step times, summarised once.

    Building it is O(n); then every option that reads the series (its own GPU, or a transfer to another GPU) costs
    O(1) instead of refitting all n points: a plan has ~200 options, a large result file ~10^5 points.
    """

    points: tuple[TimePoint, ...]
    by_batch: Mapping[int, tuple[TimePoint, ...]]
    batches: tuple[int, ...]  # distinct, ascending
    line: tuple[float, float] | None  # (t0_s, c_s_per_sample) over two or more distinct batches
    residual: float  # the line's largest relative residual
    labels: str
    # measured_micro_step's answer per micro-batch: every option transferring from this series at that micro-batch
    # reads the same time and source (not part of the series' value)
    answers: dict[tuple[int, float], tuple[float, Source, tuple[float, float]] | None] = field(
        default_factory=dict, compare=False, repr=False)

    @property
    def optimizer_s(self) -> float | None:
        """The first measured optimizer phase, if any point has one."""
        return next((p.optimizer_s for p in self.points if p.optimizer_s), None)


def time_series(points: Sequence[TimePoint]) -> TimeSeries:
    by_batch: dict[int, list[TimePoint]] = {}
    for p in points:
        by_batch.setdefault(p.batch_size, []).append(p)
    batches = tuple(sorted(by_batch))
    line: tuple[float, float] | None = None
    residual = 0.0
    if len(batches) >= 2:
        pairs = [(p.batch_size, p.step_time_s) for p in points]
        line = fit_time_line(pairs)
        residual = _max_relative_residual(pairs, *line)
    return TimeSeries(tuple(points), {b: tuple(v) for b, v in by_batch.items()}, batches, line, residual,
                      _labels(points))


def _series(points: Sequence[TimePoint] | TimeSeries) -> TimeSeries:
    return points if isinstance(points, TimeSeries) else time_series(points)


def points_used(points: Sequence[TimePoint] | TimeSeries, micro_batch: int) -> tuple[TimePoint, ...]:
    """The points measured_micro_step rests on at `micro_batch`: that batch's own, else all (fit or scaling)."""
    s = _series(points)
    return s.by_batch.get(micro_batch) or s.points


def measured_micro_step(
    points: Sequence[TimePoint] | TimeSeries, micro_batch: int, *, optimizer_s: float = 0.0
) -> tuple[float, Source, tuple[float, float]] | None:
    """Micro-step seconds at `micro_batch` from measured points on one GPU and precision, with source and band.

    docs/methods.md#step-time: the exact batch is "measured"; otherwise a t0 + c·b fit over ≥2 batches is "interpolated"
    within [smallest/1.25, 1.25 × largest] (boundaries included) and "extrapolated" beyond. One measured batch
    scales proportionally ("extrapolated"): the truth lies between that batch's time (all fixed overhead) and
    the proportional value (none), so the band spans both, plus a margin. None when there are no points.

    `optimizer_s`: the optimizer step inside every measured step (a measured step is forward + backward + one
    optimizer step). It does not depend on the batch, so one batch's time is scaled without it and it is added back
    (never more than half the measured step); a t(b) fit holds it in its intercept already.
    """
    if isinstance(points, TimeSeries):
        key = (micro_batch, optimizer_s)
        if key not in points.answers:
            points.answers[key] = _measured_micro_step(points, micro_batch, optimizer_s=optimizer_s)
        return points.answers[key]
    return _measured_micro_step(time_series(points), micro_batch, optimizer_s=optimizer_s)


def _measured_micro_step(s: TimeSeries, micro_batch: int, *,
                         optimizer_s: float) -> tuple[float, Source, tuple[float, float]] | None:
    if micro_batch < 1:
        raise ValueError(f"micro_batch must be >= 1, got {micro_batch}")
    if not s.points:
        return None
    exact = s.by_batch.get(micro_batch)
    if exact:
        t = statistics.median(p.step_time_s for p in exact)
        if _origin(exact) == "published":  # a cited public figure at this very batch
            return t, Source("published", parts=(detail("published_at", labels=_labels(exact), batch=micro_batch),)), \
                _band(t, MEASURED_BAND)
        source = Source("measured", parts=(detail("measured_median", batch=micro_batch, labels=_labels(exact)),))
        return t, source, _band(t, MEASURED_BAND)
    batches = s.batches
    if s.line is None:  # one measured batch
        return _single_point_scaling(s.points, micro_batch, optimizer_s=optimizer_s)
    t0, c = s.line
    t = t0 + c * micro_batch
    residual = s.residual
    published = "_published" if _origin(s.points) == "published" else ""
    fit = dict(t0=t0 * 1e3, c=c * 1e3, batches=batches, labels=s.labels)
    low_limit, high_limit = batches[0] / INTERPOLATION_LIMIT, batches[-1] * INTERPOLATION_LIMIT
    if low_limit <= micro_batch <= high_limit:
        half = max(INTERPOLATED_BAND_MIN, residual)
        return t, Source("interpolated", parts=(detail("interpolated" + published, batch=micro_batch, **fit),)), \
            _band(t, half)
    if micro_batch > high_limit:
        where = detail("above", batch=micro_batch, ratio=micro_batch / batches[-1], largest=batches[-1],
                       limit=INTERPOLATION_LIMIT)
        distance = micro_batch / high_limit
    else:
        where = detail("below", batch=micro_batch, ratio=batches[0] / micro_batch, smallest=batches[0],
                       limit=INTERPOLATION_LIMIT)
        distance = low_limit / micro_batch
    # The band grows in proportion to the distance past the interpolation limit (assumption).
    half = max(EXTRAPOLATED_BAND_MIN, 2.0 * residual) * distance
    return t, Source("extrapolated", parts=(where, detail("fit" + published, **fit))), _band(t, half)


def _single_point_scaling(points: Sequence[TimePoint], micro_batch: int, *,
                          optimizer_s: float) -> tuple[float, Source, tuple[float, float]]:
    b1 = points[0].batch_size
    t1 = statistics.median(p.step_time_s for p in points)
    ratio = micro_batch / b1
    opt = min(max(optimizer_s, 0.0), 0.5 * t1)  # the optimizer inside the step keeps its time
    t = opt + (t1 - opt) * ratio
    fixed = SINGLE_POINT_FIXED_SHARE_MAX
    t_fixed = opt + (t1 - opt) * (fixed + (1.0 - fixed) * ratio)
    low, high = min(t, t_fixed), max(t, t_fixed)
    band = (low / (1.0 + SINGLE_POINT_BAND), high * (1.0 + SINGLE_POINT_BAND))
    # Prior for the fixed per-step part when one batch gives no t(b) fit: none (proportional scaling) for the
    # estimate; the band reaches the largest share the prior allows (SINGLE_POINT_FIXED_SHARE_MAX).
    parts = (detail(f"single_{_origin(points)}", batch=micro_batch, ratio=ratio, b1=b1, labels=_labels(points)),
             *((detail("optimizer_kept", ms=opt * 1e3),) if opt > 0.0 else ()),
             detail("prior_fixed", pct=100 * fixed, b1=b1, ms=t_fixed * 1e3))
    return t, Source("extrapolated", parts=parts), band


# ---------------------------------------------------------------- transfer between GPUs, analytic

def transfer_micro_step(
    t_a_s: float, *, t0_s: float, flops_per_step: float, peak_a_tflops: float, peak_b_tflops: float,
    bw_a_gb_s: float, bw_b_gb_s: float, eta: float = ETA,
) -> tuple[float, tuple[float, float]]:
    """Micro-step on GPU B from one measured on GPU A at the same micro-batch and precision (docs/methods.md#step-time).

    t'_A = t_A − t0 (launch-bound intercept kept unscaled); c_A = min(t'_A, F/(η·P_A)) is the compute part;
    t_B = t0 + F/(η·P_B) + (t'_A − c_A)·BW_A/BW_B. Band: t0 + t'_A·[min, max](P_A/P_B, BW_A/BW_B), widened to
    contain t_B (a run above η·P_A on A is predicted at η on B, which can fall outside the pure ratios).
    """
    for name, value in (("t_a_s", t_a_s), ("peak_a_tflops", peak_a_tflops), ("peak_b_tflops", peak_b_tflops),
                        ("bw_a_gb_s", bw_a_gb_s), ("bw_b_gb_s", bw_b_gb_s)):
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value}")
    if t0_s < 0 or flops_per_step < 0 or not 0 < eta <= 1:
        raise ValueError(f"need t0_s >= 0, flops >= 0 and 0 < eta <= 1 (got {t0_s}, {flops_per_step}, {eta})")
    t0 = min(t0_s, t_a_s)
    t_prime_a = t_a_s - t0
    compute_a = min(t_prime_a, flops_per_step / (eta * peak_a_tflops * 1e12))
    memory_a = t_prime_a - compute_a
    t_b = t0 + flops_per_step / (eta * peak_b_tflops * 1e12) + memory_a * bw_a_gb_s / bw_b_gb_s
    ratios = (peak_a_tflops / peak_b_tflops, bw_a_gb_s / bw_b_gb_s)
    low = min(t0 + t_prime_a * min(ratios), t_b)
    high = max(t0 + t_prime_a * max(ratios), t_b)
    return t_b, (low, high)


def analytic_micro_step(flops_per_step: float, peak_tflops: float, mfu: float) -> float:
    """Micro-step seconds F / (P × MFU) (docs/methods.md#step-time "Analytic")."""
    if not peak_tflops > 0 or not 0 < mfu <= 1:
        raise ValueError(f"need peak_tflops > 0 and 0 < mfu <= 1 (got {peak_tflops}, {mfu})")
    return flops_per_step / (peak_tflops * 1e12 * mfu)


def default_mfu(family: str, precision: str) -> float:
    """Default MFU for an analytic estimate (DEFAULT_MFU; unknown families use 'custom')."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}")
    row = DEFAULT_MFU.get(family, DEFAULT_MFU["custom"])
    return row[PRECISIONS.index(precision)]


# ---------------------------------------------------------------- optimizer, input pipeline

def optimizer_bytes_per_param(optimizer: str, optimizer_impl: str) -> float:
    try:
        return OPTIMIZER_BYTES_PER_PARAM[(optimizer, optimizer_impl)]
    except KeyError:
        raise ValueError(f"unknown optimizer/impl {optimizer!r}/{optimizer_impl!r}") from None


def optimizer_step_s(
    trainable_params: int, optimizer: str, optimizer_impl: str, bandwidth_gb_s: float, *, n_shards: int = 1
) -> float:
    """Optimizer step seconds = bytes / (0.8 · BW) (docs/methods.md#step-time); ZeRO shards the update over n_shards GPUs."""
    if not bandwidth_gb_s > 0 or n_shards < 1:
        raise ValueError(f"need bandwidth > 0 and n_shards >= 1 (got {bandwidth_gb_s}, {n_shards})")
    total_bytes = trainable_params * optimizer_bytes_per_param(optimizer, optimizer_impl) / n_shards
    return total_bytes / (OPTIMIZER_BANDWIDTH_FRACTION * bandwidth_gb_s * 1e9)


def input_time_s(micro_batch: int, cpu_s_per_sample: float | None, workers: int) -> float | None:
    """Seconds to load one micro-batch = b × per-sample CPU cost / workers (0 workers = the main process alone)."""
    if cpu_s_per_sample is None:
        return None
    if workers < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    return micro_batch * cpu_s_per_sample / max(workers, 1)


# ---------------------------------------------------------------- one optimizer step

def _step_time(fwd_bwd_s: float, grad_accum: int, *, optimizer_s: float, input_s: float | None,
               exposed_comm_s: float, input_overlaps: bool) -> tuple[float, float]:
    """(step seconds, GPU-busy seconds) for one optimizer step."""
    busy = grad_accum * fwd_bwd_s + optimizer_s + exposed_comm_s
    if input_s is None:
        return busy, busy
    loading = grad_accum * input_s
    return (max(busy, loading) if input_overlaps else busy + loading), busy


def assemble_step(
    micro_step_s: float, band: tuple[float, float], source: Source, *, grad_accum: int, optimizer_s: float,
    samples_per_step: int, input_s: float | None = None, exposed_comm_s: float = 0.0, notes: Iterable[Note] = (),
    optimizer_included: bool = False, input_overlaps: bool = True, optimizer_in_micro_s: float | None = None,
    band_meaning: str = "assumed",
) -> StepEstimate:
    """One optimizer step from one micro-step (docs/methods.md#step-time "Gradient accumulation", "Input pipeline").

    Rule against double counting: the optimizer runs once per step. `micro_step_s` (and `band`) is forward +
    backward only, unless `optimizer_included=True` says it is a measured step at accumulation 1, which contains
    the optimizer phase `optimizer_s`; then that phase is taken out before multiplying:
        compute = k·(t_micro − t_opt) + t_opt.
    DataLoader workers prefetch continuously, so loading overlaps every part of the step (forward, backward,
    optimizer, communication): step = max(compute + exposed comm, k·input). Without workers
    (`input_overlaps=False`, loading in the main process) the loading time adds instead.
    samples_per_s = samples_per_step / step. The band is computed through the same formula from the micro band.
    `optimizer_in_micro_s` is the optimizer phase inside a measured micro-step when it differs from the one the step
    runs (ZeRO shards the update over the GPUs: the one-GPU phase comes out, 1/N of it goes back in).
    """
    if grad_accum < 1:
        raise ValueError(f"grad_accum must be >= 1, got {grad_accum}")
    if micro_step_s < 0 or optimizer_s < 0 or exposed_comm_s < 0:
        raise ValueError("times must be non-negative")
    notes = list(notes)
    in_micro = optimizer_s if optimizer_in_micro_s is None else optimizer_in_micro_s
    optimizer_part = min(in_micro, micro_step_s) if optimizer_included else 0.0

    def fwd_bwd(t: float) -> float:
        return max(t - optimizer_part, 0.0)

    def step_time(micro_s: float) -> tuple[float, float]:
        return _step_time(fwd_bwd(micro_s), grad_accum, optimizer_s=optimizer_s, input_s=input_s,
                          exposed_comm_s=exposed_comm_s, input_overlaps=input_overlaps)

    step, busy = step_time(micro_step_s)
    low, _ = step_time(band[0])
    high, _ = step_time(band[1])
    if input_s is not None and input_overlaps and high - low <= 1e-9 * step:
        # Input-bound at both ends: the range is the loading figure's, a single typed CPU time per sample, so an
        # assumed +LOADING_BAND above it (a range never has zero width). Never below it: no step is faster than its
        # data loading (physics_bounds), and every GPU that loading binds shows the same floor.
        low, high = step, step * (1.0 + LOADING_BAND)
        band_meaning = "assumed"
    if optimizer_included and grad_accum > 1:
        notes.append(Note("optimizer_counted_once", duration=optimizer_part, k=grad_accum))
    if input_s is not None:
        loading = grad_accum * input_s
        if not input_overlaps:
            notes.append(Note("loading_main_process", loading=loading, compute=busy))
        elif loading > busy:
            notes.append(Note("input_bound", loading=loading, compute=busy))
    return StepEstimate(
        step_time_s=step,
        micro_step_time_s=fwd_bwd(micro_step_s),
        samples_per_s=samples_per_step / step if step > 0 else math.inf,
        source=source,
        band_s=(min(low, step), max(high, step)),
        compute_step_time_s=grad_accum * fwd_bwd(micro_step_s) + optimizer_s,
        input_time_s=input_s,
        exposed_comm_s=exposed_comm_s,
        notes=tuple(notes),
        band_meaning=band_meaning,
    )
