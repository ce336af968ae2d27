"""The calibrated analytic step time: a two-term roofline whose few parameters are fitted on published runs.

    t(fwd+bwd) = F / (P_dense(precision) × e[group] × f[precision]) + traffic × A / BW

F: model FLOPs of the micro-step; P_dense: the profile's dense peak; e: the fraction of it an architecture group
reaches (bounded by 0.87, the best measured shape: ml-engineering MAMF, reference/gpu_reference.md); f: tf32/fp32
relative to 16-bit; A: the micro-batch's stored activation bytes (planner memory model); BW: memory bandwidth;
traffic: DRAM bytes moved per stored activation byte (forward writes, backward reads, the elementwise passes).
The optimizer step is added apart (steptime.optimizer_step_s), as for every other path.

Fitted by `python perf/calibrate.py` (bounded Nelder-Mead on squared log errors, deterministic); parameters: one
efficiency per architecture group with data, two precision factors and one traffic figure.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from planner.engine import steptime
from planner.inputs.calibration import StepCalibration
from planner.inputs.profiles import GpuProfile
from planner.inputs.resultfile import percentile

EFFICIENCY_BOUNDS = (0.2, 0.87)  # 0.87: best-shape bf16 matmuls reach 78-87% of dense peak (MAMF table)
PRECISION_FACTOR_BOUNDS = (0.5, 2.0)
TRAFFIC_BOUNDS = (1.0, 50.0)
FACTOR_PRECISIONS = ("tf32", "fp32")  # fp16 and bf16 are the reference (factor 1)
# Ampere and Hopper split by chip where the chips differ in kind: GA100 (A100) is a data-centre part with HBM; GA10x
# (RTX 30xx, A10, A6000) a graphics part with GDDR and half-rate fp32 accumulation on GeForce.
_CHIP_BY_CC = {("Ampere", "8.0"): "Ampere GA100", ("Ampere", "8.6"): "Ampere GA10x"}


def arch_group(gpu: GpuProfile) -> str:
    return _CHIP_BY_CC.get((gpu.architecture, str(gpu.compute_capability)), gpu.architecture)


@dataclass(frozen=True)
class Sample:
    """One published run as the fit sees it: seconds at 100% of dense peak, seconds to stream the activations once
    at full bandwidth, and the published forward+backward seconds (optimizer taken out)."""

    group: str
    precision: str
    compute_s: float
    activation_s: float
    target_s: float
    source: str
    kernels: float = 0.0  # kernel launches of the micro-step (traced aten ops, or per layer for a transformer shape)
    classes: ClassTerms | None = None  # the per-class split, when the model's trace (or a shape twin's) gives one


@dataclass(frozen=True)
class ClassTerms:
    """One micro-step's forward + backward by operator class, in seconds at 100% of the dense peak (FLOPs) or of
    the memory bandwidth (bytes): matmul/conv, fused attention, and the memory-bound rest (elementwise, norms,
    softmax, dropout, casts, embedding and loss). From `bench trace`'s op_classes (planner/engine/measurements.py
    OpClassLine) read at the micro-batch."""

    matmul_s: float
    attention_s: float
    matmul_bytes_s: float
    attention_bytes_s: float
    other_bytes_s: float


def _bounded(z: float, lo: float, hi: float) -> float:
    z = max(-30.0, min(30.0, z))
    return lo + (hi - lo) / (1.0 + math.exp(-z))


def _predict(s: Sample, efficiency: float, factor: float, traffic: float) -> float:
    return launch_bound_s(s.compute_s / (efficiency * factor) + traffic * s.activation_s, steptime.launch_s(s.kernels))


def launch_bound_s(device_s: float, launch_s: float) -> float:
    """A micro-step is never shorter than the host takes to launch its kernels: max(device, launch). Eager PyTorch
    enqueues each kernel and returns (asynchronous CUDA streams), so the host's launches overlap the GPU's work and
    bound the step only when the kernels are short (a small model or micro-batch). An additive launch term (the
    issue's first form) was tried: on the published corpus it worsened the held-out p90 from 38% to 43% (its large
    batches hide the host entirely), so the bound is the floor, not a sum."""
    return max(device_s, launch_s)


def _nelder_mead(f: Callable[[list[float]], float], x0: list[float], iterations: int = 3000) -> list[float]:
    """Deterministic Nelder-Mead (standard coefficients); enough for the ~10 parameters fitted here."""
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (0.5 if j == i else 0.0) for j in range(n)] for i in range(n)]
    values = [f(p) for p in simplex]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=lambda i: values[i])
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < 1e-12 * (1.0 + abs(values[0])):
            break  # converged: the simplex has collapsed onto the optimum
        centre = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        reflected = [2 * centre[j] - simplex[-1][j] for j in range(n)]
        fr = f(reflected)
        if fr < values[0]:
            expanded = [3 * centre[j] - 2 * simplex[-1][j] for j in range(n)]
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = [0.5 * (centre[j] + simplex[-1][j]) for j in range(n)]
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                for i in range(1, n + 1):
                    simplex[i] = [0.5 * (simplex[0][j] + simplex[i][j]) for j in range(n)]
                    values[i] = f(simplex[i])
    return simplex[min(range(n + 1), key=lambda i: values[i])]


@dataclass(frozen=True)
class Fit:
    compute_efficiency: dict[str, float]
    precision_factor: dict[str, float]
    activation_traffic: float

    def factor(self, precision: str) -> float:
        return self.precision_factor.get(precision, 1.0)

    def efficiency(self, group: str) -> float:
        known = self.compute_efficiency
        return known[group] if group in known else _prior(known.values())

    def predict(self, s: Sample) -> float:
        return _predict(s, self.efficiency(s.group), self.factor(s.precision), self.activation_traffic)


def fit_samples(samples: Sequence[Sample]) -> Fit:
    """The parameters that minimise Σ log²(predicted / published) over the samples."""
    if not samples:
        raise ValueError("no samples to fit")
    groups = sorted({s.group for s in samples})
    factors = [p for p in FACTOR_PRECISIONS if any(s.precision == p for s in samples)]

    def unpack(x: Sequence[float]) -> Fit:
        return Fit({g: _bounded(x[i], *EFFICIENCY_BOUNDS) for i, g in enumerate(groups)},
                   {p: _bounded(x[len(groups) + i], *PRECISION_FACTOR_BOUNDS) for i, p in enumerate(factors)},
                   _bounded(x[-1], *TRAFFIC_BOUNDS))

    def loss(x: list[float]) -> float:
        fit = unpack(x)
        return sum(math.log(fit.predict(s) / s.target_s) ** 2 for s in samples)

    best = _nelder_mead(loss, [0.0] * (len(groups) + len(factors) + 1))
    return unpack(_nelder_mead(loss, best, iterations=1500))  # a restart from the optimum escapes a collapsed simplex


def _prior(efficiencies: Iterable[float]) -> float:
    """An architecture without published runs is assumed no better than three quarters of those with data: the
    25th percentile of the fitted efficiencies (AMD's own MI300X table, not a one-GPU figure and so not fitted, gives
    523.79 of 1307 dense bf16 TFLOPS/s per GPU for Llama 3.1 8B: 0.40; bench/published/ amd-rocm-...)."""
    return percentile(list(efficiencies), 25)


def leave_one_source_out(samples: Sequence[Sample]) -> list[float]:
    """Held-out errors (predicted / published - 1): each source predicted by a fit on the others."""
    errors: list[float] = []
    for source in sorted({s.source for s in samples}):
        fit = fit_samples([s for s in samples if s.source != source])
        errors.extend(fit.predict(s) / s.target_s - 1.0 for s in samples if s.source == source)
    return errors


# The roofline by operator class ---------------------------------------------------------------------------------
# Fused attention's efficiency, fixed (not fitted): FlashAttention-2 reaches 50-73% of the A100's peak in forward +
# backward (Dao 2023, arXiv:2307.08691, abstract); the low end.
ATTENTION_EFFICIENCY = 0.5
MEMORY_EFFICIENCY_BOUNDS = (0.05, 1.0)  # traced bytes are logical sizes: fusion and caches move fewer
MIN_POINTS_PER_PARAMETER = 10


@dataclass(frozen=True)
class ClassRoofline:
    """The roofline by operator class (class_fwd_bwd_s), for models whose trace gives the per-class split:

        t = max(F_mm / (P e f), B_mm / (BW m)) + max(F_att / (P e_att f), B_att / (BW m)) + B_other / (BW m)

    e: matmul/conv efficiency (one per architecture group when the points allow ten per parameter, else one shared
    value under the key "*"); f: tf32/fp32 factor; m: memory efficiency on the traced (logical) bytes; e_att: fused
    attention's efficiency, fixed from a cited benchmark, not fitted. Measured against the two-term formula by
    perf/class_roofline.py; plans do not use it (README: "the roofline by class, tried held out" says why)."""

    matmul_efficiency: Mapping[str, float]
    precision_factor: Mapping[str, float]
    memory_efficiency: float
    attention_efficiency: float
    n_points: int
    residual_p10: float  # held-out errors of this model (one source out and one architecture out, pooled)
    residual_p90: float

    def efficiency(self, group: str) -> tuple[float, bool]:
        """(matmul efficiency, whether the group had points); a group without points takes the shared value or
        the fitted groups' 25th percentile."""
        eff = self.matmul_efficiency
        if group in eff:
            return eff[group], True
        if "*" in eff:
            return eff["*"], False
        return _prior(eff.values()), False

    @property
    def n_params(self) -> int:
        return len(self.matmul_efficiency) + len(self.precision_factor) + 1


def class_fwd_bwd_s(cr: ClassRoofline, group: str, precision: str, terms: ClassTerms,
                    launch_s: float = 0.0) -> tuple[float, float, bool]:
    """(seconds, matmul efficiency used, whether the group had points) of one micro-step's forward + backward:
    Σ over classes of max(compute, memory), floored by the host's kernel launches (launch_bound_s)."""
    e, known = cr.efficiency(group)
    f = cr.precision_factor.get(precision, 1.0)
    m = cr.memory_efficiency
    device = (max(terms.matmul_s / (e * f), terms.matmul_bytes_s / m)
              + max(terms.attention_s / (cr.attention_efficiency * f), terms.attention_bytes_s / m)
              + terms.other_bytes_s / m)
    return launch_bound_s(device, launch_s), e, known


def fit_class_roofline(samples: Sequence[Sample]) -> ClassRoofline:
    """The class roofline's parameters minimising Σ log²(predicted / published) over the samples that have a class
    split: one matmul efficiency per architecture group when there are at least ten points per parameter, else one
    shared efficiency; tf32/fp32 factors; one memory efficiency. Residuals: leave one source out, and one
    architecture group out, pooled."""
    with_classes = [s for s in samples if s.classes is not None]
    if not with_classes:
        raise ValueError("no samples with a class split")
    fit = fit_class(with_classes)
    held: list[float] = []
    # Held out both ways a plan meets: a source the fit never saw (another software stack) and an architecture it
    # never saw (the prior); one source out alone left the range too narrow for the other sources' runs.
    keys: tuple[Callable[[Sample], str], ...] = (_source_of, _group_of)
    for key in keys:
        for value in sorted({key(s) for s in with_classes}):
            kept = [s for s in with_classes if key(s) != value]
            if not kept:
                continue
            other = fit_class(kept)
            held.extend(class_predict(other, s) / s.target_s - 1.0 for s in with_classes if key(s) == value)
    return dataclasses.replace(fit, residual_p10=percentile(held, 10) if held else 0.0,
                               residual_p90=percentile(held, 90) if held else 0.0)


def _source_of(s: Sample) -> str:
    return s.source


def _group_of(s: Sample) -> str:
    return s.group


def class_predict(cr: ClassRoofline, s: Sample) -> float:
    """The class roofline's forward + backward seconds for a sample with a class split."""
    assert s.classes is not None
    return class_fwd_bwd_s(cr, s.group, s.precision, s.classes, steptime.launch_s(s.kernels))[0]


def fit_class(samples: Sequence[Sample]) -> ClassRoofline:
    """The parameters alone (no held-out residuals): fit_class_roofline adds them."""
    groups = sorted({s.group for s in samples})
    factors = [p for p in FACTOR_PRECISIONS if any(s.precision == p for s in samples)]
    per_group = (len(groups) + len(factors) + 1) * MIN_POINTS_PER_PARAMETER <= len(samples)
    keys = groups if per_group else ["*"]

    def unpack(x: Sequence[float]) -> ClassRoofline:
        return ClassRoofline(
            MappingProxyType({g: _bounded(x[i], *EFFICIENCY_BOUNDS) for i, g in enumerate(keys)}),
            MappingProxyType({p: _bounded(x[len(keys) + i], *PRECISION_FACTOR_BOUNDS) for i, p in enumerate(factors)}),
            _bounded(x[-1], *MEMORY_EFFICIENCY_BOUNDS), ATTENTION_EFFICIENCY, len(samples), 0.0, 0.0)

    def loss(x: list[float]) -> float:
        cr = unpack(x)
        return sum(math.log(class_predict(cr, s) / s.target_s) ** 2 for s in samples)

    best = _nelder_mead(loss, [0.0] * (len(keys) + len(factors) + 1))
    return unpack(_nelder_mead(loss, best, iterations=1500))


def calibration_of(samples: Sequence[Sample], *, fitted_on: str) -> StepCalibration:
    fit = fit_samples(samples)
    held = leave_one_source_out(samples) if len({s.source for s in samples}) > 1 else []

    def quantile(q: float) -> float:
        return percentile(held, q) if held else 0.0

    counts: dict[str, int] = {}
    for s in samples:
        counts[s.group] = counts.get(s.group, 0) + 1
    return StepCalibration(
        compute_efficiency=MappingProxyType(dict(fit.compute_efficiency)),
        precision_factor=MappingProxyType(dict(fit.precision_factor)),
        activation_traffic=fit.activation_traffic,
        prior_efficiency=_prior(fit.compute_efficiency.values()),
        residual_p10=quantile(10), residual_p90=quantile(90), fitted_on=fitted_on, n_points=len(samples),
        sources=tuple(sorted({s.source for s in samples})), counts=MappingProxyType(counts),
        launch_s_per_op=steptime.LAUNCH_S_PER_OP)


def calibrated_fwd_bwd_s(cal: StepCalibration, gpu: GpuProfile, precision: str, *, flops: float, peak_tflops: float,
                         activation_bytes: float, launch_s: float = 0.0) -> tuple[float, float, bool]:
    """(seconds, efficiency used, whether the architecture group had data) for one micro-step's forward+backward."""
    group = arch_group(gpu)
    known = group in cal.compute_efficiency
    efficiency = cal.compute_efficiency[group] if known else cal.prior_efficiency
    factor = cal.precision_factor.get(precision, 1.0)
    seconds = launch_bound_s(flops / (peak_tflops * 1e12 * efficiency * factor)
                             + cal.activation_traffic * activation_bytes / (gpu.memory_bandwidth_gb_per_s * 1e9),
                             launch_s)
    return seconds, efficiency, known
