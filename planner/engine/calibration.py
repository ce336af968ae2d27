"""The calibrated analytic step time: a two-term roofline whose few parameters are fitted on published runs.

    t(fwd+bwd) = F / (P_dense(precision) × e[group] × f[precision]) + traffic × A / BW

F: model FLOPs of the micro-step; P_dense: the profile's dense peak; e: the fraction of it an architecture group
reaches (bounded by 0.87, the best measured shape: ml-engineering MAMF, reference/gpu_reference.md); f: tf32/fp32
relative to 16-bit; A: the micro-batch's stored activation bytes (planner memory model); BW: memory bandwidth;
traffic: DRAM bytes moved per stored activation byte (forward writes, backward reads, the elementwise passes).
The optimizer step is added apart (steptime.optimizer_step_s), as for every other path.

Fitted by `python calibration/calibrate.py` (bounded Nelder-Mead on squared log errors, deterministic); parameters: one
efficiency per architecture group with data, two precision factors and one traffic figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
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
    stack: str = ""  # the run's software stack (its target is divided by the stack's factor before the fit)


def bounded(z: float, lo: float, hi: float) -> float:
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


def nelder_mead(f: Callable[[list[float]], float], x0: list[float], iterations: int = 3000) -> list[float]:
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
        return known[group] if group in known else prior_efficiency(known.values())

    def predict(self, s: Sample) -> float:
        return _predict(s, self.efficiency(s.group), self.factor(s.precision), self.activation_traffic)


def fit_samples(samples: Sequence[Sample]) -> Fit:
    """The parameters that minimise Σ log²(predicted / published) over the samples."""
    if not samples:
        raise ValueError("no samples to fit")
    groups = sorted({s.group for s in samples})
    factors = [p for p in FACTOR_PRECISIONS if any(s.precision == p for s in samples)]

    def unpack(x: Sequence[float]) -> Fit:
        return Fit({g: bounded(x[i], *EFFICIENCY_BOUNDS) for i, g in enumerate(groups)},
                   {p: bounded(x[len(groups) + i], *PRECISION_FACTOR_BOUNDS) for i, p in enumerate(factors)},
                   bounded(x[-1], *TRAFFIC_BOUNDS))

    def loss(x: list[float]) -> float:
        fit = unpack(x)
        return sum(math.log(fit.predict(s) / s.target_s) ** 2 for s in samples)

    best = nelder_mead(loss, [0.0] * (len(groups) + len(factors) + 1))
    return unpack(nelder_mead(loss, best, iterations=1500))  # a restart from the optimum escapes a collapsed simplex


def prior_efficiency(efficiencies: Iterable[float]) -> float:
    """An architecture without published runs is assumed no better than three quarters of those with data: the
    25th percentile of the fitted efficiencies (AMD's own MI300X table, not a one-GPU figure and so not fitted, gives
    523.79 of 1307 dense bf16 TFLOPS/s per GPU for Llama 3.1 8B: 0.40; calibration/published/ amd-rocm-...)."""
    return percentile(list(efficiencies), 25)


def leave_one_source_out(samples: Sequence[Sample]) -> list[float]:
    """Held-out errors (predicted / published - 1): each source predicted by a fit on the others."""
    errors: list[float] = []
    for source in sorted({s.source for s in samples}):
        fit = fit_samples([s for s in samples if s.source != source])
        errors.extend(fit.predict(s) / s.target_s - 1.0 for s in samples if s.source == source)
    return errors


def stack_factor_of(cal: StepCalibration | None, stack: str | None) -> float:
    """A stack's step-time multiplier against plain eager PyTorch (1 without a calibration, a stack, or a factor)."""
    if cal is None or not stack:
        return 1.0
    return cal.stack_factor.get(stack, 1.0)


def eager_equivalent(samples: Sequence[Sample], stack_factor: Mapping[str, float]) -> list[Sample]:
    """The samples' targets as plain eager PyTorch would time them: ÷ their stack's factor (1 when unlisted)."""
    return [replace(s, target_s=s.target_s / stack_factor.get(s.stack, 1.0)) for s in samples]


def calibration_of(samples: Sequence[Sample], *, fitted_on: str, stack_factor: Mapping[str, float] | None = None,
                   stack_basis: Mapping[str, str] | None = None) -> StepCalibration:
    """The fit on `samples` made eager-equivalent by `stack_factor` (the roofline then times plain eager PyTorch;
    a plan multiplies by its own stack's factor)."""
    samples = eager_equivalent(samples, stack_factor or {})
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
        prior_efficiency=prior_efficiency(fit.compute_efficiency.values()),
        residual_p10=quantile(10), residual_p90=quantile(90), fitted_on=fitted_on, n_points=len(samples),
        sources=tuple(sorted({s.source for s in samples})), counts=MappingProxyType(counts),
        launch_s_per_op=steptime.LAUNCH_S_PER_OP,
        stack_factor=MappingProxyType(dict(stack_factor or {})), stack_basis=MappingProxyType(dict(stack_basis or {})))


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
