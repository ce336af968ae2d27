"""Optimizer steps to the target: user counts or the McCandlish et al. 2018 large-batch model (docs/methods.md#convergence)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.engine.estimates import ConvergenceEstimate, Source, detail
from planner.engine.fit import least_squares_line
from planner.engine.notes import Note
from planner.inputs.convergence_calibration import ConvergenceCalibration, load_convergence_calibration
from planner.inputs.errors import CannotEstimate, FitError
from planner.vocab import SGD_FAMILY

if TYPE_CHECKING:
    from planner.inputs.scenario import ReferencePoint, Workload

# Only when planner/inputs/convergence_calibration.json is missing: the steps range is +/- this fraction (a planning
# assumption) and there is no large-batch correction. The shipped file replaces it with the seed spread and the
# held-out error of MLPerf's reference convergence points (calibration/convergence_report.py).
FIT_BAND_FRACTION = 0.15
UNCALIBRATED = ConvergenceCalibration(
    large_batch_exponent=0.0, seed_spread_p10=-FIT_BAND_FRACTION, seed_spread_p90=FIT_BAND_FRACTION,
    extrapolation_per_log_batch=0.0, n_benchmarks=0, n_heldout_points=0, source="planning assumption")

# Past 2 b_crit, S(B) <= 1.5 S_min: doubling the batch again saves at most a sixth of the steps.
FAR_PAST_B_CRIT = 2.0

ADAM_FAMILY = ("adam", "adamw", "adam8bit", "adafactor")

CAVEATS = (Note("caveat_same_target"), Note("caveat_lr_retuned"), Note("caveat_b_crit_grows"))


class ConvergenceFitError(FitError):
    """The reference points do not give a usable McCandlish fit (steps do not fall as the batch grows)."""


@dataclass(frozen=True)
class ReferenceFit:
    """S(B) = S_min + E_min/B fitted to reference points, the batches it saw, and how far its points are from it.

    perfect_scaling: the unconstrained fit gave S_min <= 0 with E_min > 0, so S_min is 0 (steps x batch constant):
    b_crit is then unknown (above every reference batch).
    """

    s_min: float
    e_min: float
    low_batch: float
    high_batch: float
    largest_log_residual: float  # max |ln(S_i / S(B_i))| over the reference points
    perfect_scaling: bool

    @property
    def b_crit(self) -> float | None:
        return self.e_min / self.s_min if self.s_min > 0 else None


# ---------------------------------------------------------------- formulas

def steps_at_batch(s_min: float, e_min: float, batch: float) -> float:
    """S(B) = S_min + E_min/B (McCandlish et al. 2018, eq. 2.11: (S/S_min - 1)(E/E_min - 1) = 1 with E = B*S)."""
    if batch <= 0:
        raise ValueError(f"batch must be positive, got {batch}")
    return s_min + e_min / batch


def s_min_from_one_point(batch: float, steps: float, b_crit: float) -> float:
    """S_min = S_1/(1 + b_crit/B_1): eq. 2.11 at one measured point with E_min = b_crit * S_min."""
    if batch <= 0 or steps <= 0 or b_crit <= 0:
        raise ValueError(f"batch, steps and b_crit must be positive, got {batch}, {steps}, {b_crit}")
    return steps / (1.0 + b_crit / batch)


def fit_mccandlish(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(S_min, E_min) from (B_i, S_i): least squares of S on 1/B; exact for two points, weights 1/S_i^2 beyond.

    The 1/S_i^2 weights make the residuals relative, so a 10% miss at a small step count counts as much as
    one at a large count. When the fit gives S_min <= 0 with E_min > 0 the points show perfect scaling (steps fall
    at least as fast as 1/B, as in Goyal et al. 2017 and You et al. 2020 up to their largest batches): S_min is then
    0 and E_min the fit through the origin (`fit_perfect_scaling`). Raises ConvergenceFitError when E_min <= 0
    (steps do not fall as the batch grows: b_crit below the smallest batch).
    """
    if len(points) < 2:
        raise ConvergenceFitError(f"a McCandlish fit needs two or more reference points, got {len(points)}")
    for b, s in points:
        if b <= 0 or s <= 0:
            raise ConvergenceFitError(f"reference point (batch {b}, steps {s}) must have a positive batch and steps")
    if len({b for b, _ in points}) < 2:
        raise ConvergenceFitError("a McCandlish fit needs reference points at two or more different batch sizes")
    line = [(1.0 / b, s) for b, s in points]
    s_min, e_min = least_squares_line(line, _fit_weights(points))
    if e_min <= 0:
        raise ConvergenceFitError(_fit_failure_message(points, e_min))
    if s_min <= 0:
        e_perfect = fit_perfect_scaling(points)
        worst = max(abs(math.log(s * b / e_perfect)) for b, s in points)
        if worst > PERFECT_SCALING_MAX_LOG_RESIDUAL:
            raise ConvergenceFitError(
                f"the reference points do not follow one curve: the best perfect-scaling fit (steps = "
                f"{_num(e_perfect)}/B) misses one of them by {math.exp(worst):.2g}x; check their steps or epochs")
        return 0.0, e_perfect
    return s_min, e_min


# A perfect-scaling fit (S = E_min/B) that misses a reference point by more than 1.5x is not a fit: the points
# contradict each other (e.g. 1000 steps at 256, 100 at 512, 900 at 1024). MLPerf's seed spread is about ±6%.
PERFECT_SCALING_MAX_LOG_RESIDUAL = math.log(1.5)


def fit_perfect_scaling(points: list[tuple[float, float]]) -> float:
    """E_min of S = E_min/B: least squares of S on x = 1/B through the origin, E = sum(w x S) / sum(w x^2), with the
    weights of `fit_mccandlish` (1 for two points, 1/S_i^2 beyond). Regression through the origin: Press et al.,
    Numerical Recipes 3rd ed. 2007, §15.2 with the intercept fixed at 0."""
    weights = _fit_weights(points) or [1.0] * len(points)
    num = sum(w * s / b for w, (b, s) in zip(weights, points, strict=True))
    den = sum(w / b**2 for w, (b, _) in zip(weights, points, strict=True))
    return num / den


def _fit_weights(points: list[tuple[float, float]]) -> list[float] | None:
    return None if len(points) == 2 else [1.0 / s**2 for _, s in points]


def _fit_failure_message(points: list[tuple[float, float]], e_min: float) -> str:
    batches = sorted(b for b, _ in points)
    span = f"batches {_num(batches[0])}-{_num(batches[-1])}"
    why = (f"steps do not fall as the batch grows across {span} (fit E_min={_num(e_min)}), "
           "so b_crit lies below the smallest measured batch")
    return (f"b_crit is beyond the measured range: {why}; not extrapolating. Add a reference point "
            "beyond that batch, or give workload.b_crit")


def fit_reference_points(points: list[tuple[float, float]]) -> ReferenceFit:
    """The McCandlish fit of (B_i, S_i) with its batch span and largest log residual (ConvergenceFitError as
    `fit_mccandlish`)."""
    s_min, e_min = fit_mccandlish(points)
    residual = max(abs(math.log(s / steps_at_batch(s_min, e_min, b))) for b, s in points)
    return ReferenceFit(s_min=s_min, e_min=e_min, low_batch=min(b for b, _ in points),
                        high_batch=max(b for b, _ in points), largest_log_residual=residual,
                        perfect_scaling=s_min == 0.0)


def steps_past_reference(s_min: float, e_min: float, batch: float, high_batch: float, *, exponent: float) -> float:
    """S(B) = S_min + (E_min/B)·(B/B_max)^gamma for B > B_max (the largest reference batch); eq. 2.11 up to B_max.

    One parameter, gamma, fitted leave-one-benchmark-out on MLPerf's reference convergence points
    (calibration/convergence_report.py; the value in planner/inputs/convergence_calibration.json): fitted at the small
    reference batches, eq. 2.11 under-counts the steps at larger ones (MLPerf ResNet-50 and BERT: about half the
    published steps at 20-37x the reference batch). Points far below b_crit measure E_min but barely constrain S_min,
    and the gradient noise scale, hence b_crit, is smaller early in training than late (McCandlish et al. 2018 §3.3
    and App. D; Kaplan et al. 2020 §5.1, B_crit(L) grows as the loss falls), so the perfect-scaling term E_min/B
    falls slower than 1/B past the measured batches: as B^(gamma - 1). gamma < 1 keeps S(B) falling with B.
    The curvature is not in eq. 2.11 itself (a sum of phases with their own noise scales is still S_min + E_min/B),
    so gamma is an empirical correction: 0.145 on all 18 MLPerf benchmarks, 0.113-0.158 with any one left out;
    held out, it moves the mean signed error past 8x the largest reference batch from -35% to -10% and over all 63
    held-out batches from -10% to +4% (median |error| 11.5% -> 9.7%), but over-counts at 2-8x (0% -> +13%):
    `.venv/bin/python calibration/convergence_report.py`.
    """
    if batch <= high_batch or exponent == 0.0:
        return steps_at_batch(s_min, e_min, batch)
    growth: float = (batch / high_batch) ** exponent
    return s_min + e_min / batch * growth


def log_batch_distance(batch: float, low_batch: float, high_batch: float) -> float:
    """ln of how far `batch` is outside [low_batch, high_batch]: 0 inside, ln(B/B_max) above, ln(B_min/B) below."""
    if batch > high_batch:
        return math.log(batch / high_batch)
    if batch < low_batch:
        return math.log(low_batch / batch)
    return 0.0


def seed_half_width_log(calibration: ConvergenceCalibration) -> float:
    """h_seed = max(-ln(1 + p10), ln(1 + p90)) of the seed spread: the steps to converge of one seed around the mean."""
    return max(-math.log1p(calibration.seed_spread_p10), math.log1p(calibration.seed_spread_p90))


def steps_band_log(fit_residual_log: float, distance_log: float, calibration: ConvergenceCalibration) -> float:
    """h = sqrt(max(h_seed, r_fit)^2 + (k·d)^2): the steps range is S·e^-h to S·e^h.

    h_seed: the seed spread (`seed_half_width_log`); r_fit: the fit's largest log residual; d: the log distance of
    the batch outside the reference batches; k: the held-out error per unit of d (calibration/convergence_report.py). The
    two add in quadrature as independent errors. Below the smallest reference batch k is assumed, not measured
    (MLPerf gives no held-out point there). Shipped (planner/inputs/convergence_calibration.json): seed spread
    p10/p90 -5.6%/+5.6% of 2,155 MLPerf seeds (each benchmark weighing the same), k = 0.142; held out, 76% of the
    published seed means fall inside (`.venv/bin/python calibration/convergence_report.py`).
    """
    inside = max(seed_half_width_log(calibration), fit_residual_log)
    return math.hypot(inside, calibration.extrapolation_per_log_batch * distance_log)


def convergence_calibration() -> ConvergenceCalibration:
    """The shipped calibration, or UNCALIBRATED (+/-15%, no correction) when its file is missing."""
    return load_convergence_calibration() or UNCALIBRATED


# Warm-up for large-batch SGD: "gradual warmup ... over the first 5 epochs" (Goyal et al. 2017, §2.2).
SGD_WARMUP_EPOCHS = 5


def lr_advice(optimizer: str, reference_batch: float | None, batch: float, b_noise: float | None, *,
              samples_per_epoch: float | None = None) -> tuple[Note, ...]:
    """How to move the learning rate and its warm-up from the batch it was tuned at to `batch`, citing the rules.

    SGD: linear scaling with gradual warm-up over ~5 epochs (Goyal et al. 2017). Adam-family: square-root scaling
    (Malladi et al. 2022), keeping the warm-up's samples (its steps scale by reference/batch). With a noise scale:
    eps_opt = eps_max/(1 + B_noise/B) (McCandlish et al. 2018, SGD).
    """
    if optimizer in SGD_FAMILY:
        rule, exponent, cite = "lr_rule_linear", 1.0, "Goyal et al. 2017"
    elif optimizer in ADAM_FAMILY:
        rule, exponent, cite = "lr_rule_sqrt", 0.5, "Malladi et al. 2022"
    else:
        raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {', '.join(SGD_FAMILY + ADAM_FAMILY)}")
    out = []
    if reference_batch and b_noise and batch > b_noise:
        # Past the critical batch the plan reports, a larger LR no longer buys fewer steps (McCandlish et al. 2018):
        # the rule scales up to b_crit only (issue 35 e: ×32 was advised where the noise-scale line implied ×11.3).
        out.append(Note("lr_scale_capped", rule=Note(rule), cite=cite, ref=reference_batch, batch=batch,
                        b_crit=b_noise, factor=lr_scale_factor(reference_batch, batch, exponent, b_crit=b_noise)))
    elif reference_batch:
        out.append(Note("lr_scale", rule=Note(rule), cite=cite, ref=reference_batch, batch=batch,
                        factor=lr_scale_factor(reference_batch, batch, exponent)))
    else:
        out.append(Note("lr_scale_unknown_ref", rule=Note(rule), cite=cite))
    if b_noise:
        out.append(Note("lr_noise_fraction", pct=round(100 * optimal_lr_fraction(b_noise, batch)),
                        b_noise=b_noise))
    if reference_batch and batch > reference_batch:
        if optimizer in SGD_FAMILY:
            steps = round(SGD_WARMUP_EPOCHS * samples_per_epoch / batch) if samples_per_epoch else None
            out.append(Note("lr_warmup_epochs", epochs=SGD_WARMUP_EPOCHS, steps=steps if steps else "?"))
        else:
            out.append(Note("lr_warmup_samples", factor=reference_batch / batch, ref=reference_batch,
                            batch=batch))
    return tuple(out)


def lr_scale_factor(reference_batch: float, batch: float, exponent: float, *, b_crit: float | None = None) -> float:
    """(B / B_ref)^exponent, both batches capped at the critical batch when one is known: beyond b_crit the LR stops
    growing (exponent 1: linear, Goyal et al. 2017; 0.5: square root, Malladi et al. 2022)."""
    cap = b_crit if b_crit else math.inf
    return float((min(batch, cap) / min(reference_batch, cap)) ** exponent)


def optimal_lr_fraction(b_noise: float, batch: float) -> float:
    """eps_opt/eps_max = 1/(1 + B_noise/B) (McCandlish et al. 2018, optimal SGD step size)."""
    return 1.0 / (1.0 + b_noise / batch)


# ---------------------------------------------------------------- the estimate

def estimate_convergence(workload: Workload, global_batch: int, seq_len: int | None, *,
                         calibration: ConvergenceCalibration | None = None) -> ConvergenceEstimate:
    """Optimizer steps at `global_batch` to the workload's target; early_stop_fraction is applied by cost.

    calibration: for reference points, the large-batch correction and steps range (default: the shipped file).
    """
    if global_batch <= 0:
        raise ValueError(f"global_batch must be positive, got {global_batch}")
    if workload.epochs is not None:
        return _from_epochs(workload, global_batch, workload.epochs)
    if workload.tokens is not None:
        return _from_tokens(workload, global_batch, workload.tokens, seq_len)
    if workload.reference_points:
        return _from_reference_points(workload, global_batch, calibration or convergence_calibration())
    raise ValueError("workload needs one of epochs, tokens or reference_points")


def steps_for_epochs(epochs: float, dataset_samples: int, batch: float) -> int:
    """steps = ceil(epochs * D / B): the last partial batch is still a step."""
    return math.ceil(epochs * dataset_samples / batch - 1e-9)


def steps_for_tokens(tokens: float, batch: float, seq_len: int) -> int:
    """steps = ceil(tokens / (B * seq_len)): each sample is one sequence of seq_len tokens."""
    return math.ceil(tokens / (batch * seq_len) - 1e-9)


def _from_epochs(workload: Workload, batch: int, epochs: float) -> ConvergenceEstimate:
    dataset = _dataset_samples(workload, "epochs")
    steps = steps_for_epochs(epochs, dataset, batch)
    how = detail("epochs", epochs=epochs, samples=dataset, batch=batch)
    return ConvergenceEstimate(
        steps=steps, epochs=epochs, samples=epochs * dataset, source=Source("user", parts=(how,)),
        b_crit=workload.b_crit, notes=_b_crit_notes(batch, workload.b_crit),
    )


def _from_tokens(workload: Workload, batch: int, tokens: float, seq_len: int | None) -> ConvergenceEstimate:
    if not seq_len:
        raise CannotEstimate("workload.tokens", "a model with a sequence length (model.transformer.seq_len, or a "
                             "zoo or result-file model that has one) to turn tokens into steps")
    steps = steps_for_tokens(tokens, batch, seq_len)
    samples = tokens / seq_len
    epochs = samples / workload.dataset_samples if workload.dataset_samples else None
    how = detail("tokens", tokens=tokens, batch=batch, seq_len=seq_len)
    return ConvergenceEstimate(
        steps=steps, epochs=epochs, samples=samples, source=Source("user", parts=(how,)),
        b_crit=workload.b_crit, notes=_b_crit_notes(batch, workload.b_crit),
    )


def _from_reference_points(workload: Workload, batch: int, cal: ConvergenceCalibration) -> ConvergenceEstimate:
    points = [(float(p.global_batch), _point_steps(workload, p)) for p in workload.reference_points]
    notes: list[Note] = []
    fit = _reference_fit(points, workload.b_crit, notes)
    b_crit: float | None
    if fit is None:  # one point, a failed fit or perfect scaling with workload.b_crit: eq. 2.11 at the nearest point
        if workload.b_crit is None:
            raise ValueError("one reference point needs workload.b_crit (or give two or more points)")
        s_min, e_min, how = _one_point(points, batch, workload.b_crit)
        raw_steps = steps_at_batch(s_min, e_min, batch)
        residual = max(abs(math.log(s / steps_at_batch(s_min, e_min, b))) for b, s in points)
        b_crit = workload.b_crit
    else:
        s_min, e_min, residual, b_crit = fit.s_min, fit.e_min, fit.largest_log_residual, fit.b_crit
        how = (detail("mccandlish", n=len(points)), detail("s_min", s_min=s_min, e_min=e_min))
        raw_steps = steps_past_reference(s_min, e_min, batch, fit.high_batch, exponent=cal.large_batch_exponent)
        notes += _fit_notes(fit, batch, raw_steps, workload.b_crit, cal)
    steps = math.ceil(raw_steps - 1e-9)
    low, high = min(b for b, _ in points), max(b for b, _ in points)
    band = steps_band_log(residual, log_batch_distance(batch, low, high), cal)
    notes.append(_band_note(band, residual, cal))
    notes += _outside_range_notes(points, batch)
    notes += _b_crit_notes(batch, b_crit)
    notes += CAVEATS
    dataset = workload.dataset_samples
    return ConvergenceEstimate(
        steps=steps, epochs=steps * batch / dataset if dataset else None, samples=steps * batch,
        source=Source("analytic", parts=how), b_crit=b_crit,
        steps_range=(max(1.0, steps * math.exp(-band)), steps * math.exp(band)), s_min=s_min, e_min=e_min,
        notes=tuple(notes),
    )


def _reference_fit(points: list[tuple[float, float]], b_crit: float | None, notes: list[Note]) -> ReferenceFit | None:
    """The fit of two or more points; None (with a note) where a given b_crit takes over from it."""
    if len(points) < 2:
        return None
    try:
        fit = fit_reference_points(points)
    except ConvergenceFitError as exc:
        if b_crit is None:
            raise
        notes.append(Note("fit_fallback", error=str(exc), b_crit=b_crit))
        return None
    if fit.perfect_scaling and b_crit is not None:
        notes.append(Note("perfect_scaling_b_crit", b_crit=b_crit, high=fit.high_batch))
        return None
    return fit


def _fit_notes(fit: ReferenceFit, batch: int, raw_steps: float, b_crit_given: float | None,
               cal: ConvergenceCalibration) -> list[Note]:
    out = []
    if fit.perfect_scaling:
        out.append(Note("perfect_scaling", low=fit.low_batch, high=fit.high_batch))
    elif b_crit_given is not None:
        out.append(Note("b_crit_ignored", given=b_crit_given, fitted=fit.e_min / fit.s_min))
    if batch > fit.high_batch and cal.large_batch_exponent != 0.0:
        plain = steps_at_batch(fit.s_min, fit.e_min, batch)
        out.append(Note("large_batch_correction", ratio=batch / fit.high_batch, high=fit.high_batch,
                        exponent=cal.large_batch_exponent, steps=math.ceil(raw_steps - 1e-9),
                        plain=math.ceil(plain - 1e-9), pct=round(100 * (raw_steps / plain - 1))))
    return out


def _band_note(band_log: float, residual_log: float, cal: ConvergenceCalibration) -> Note:
    if cal is UNCALIBRATED:
        return Note("steps_band", pct=round(100 * (math.exp(band_log) - 1)), min_pct=round(FIT_BAND_FRACTION * 100))
    return Note("steps_range_mlperf", low_pct=round(100 * (1 - math.exp(-band_log))),
                high_pct=round(100 * (math.exp(band_log) - 1)),
                seed_pct=round(100 * (math.exp(seed_half_width_log(cal)) - 1)),
                fit_pct=round(100 * (math.exp(residual_log) - 1)),
                per_e_pct=round(100 * cal.extrapolation_per_log_batch))


def _point_steps(workload: Workload, point: ReferencePoint) -> float:
    """A reference point's steps: given, or epochs * D / B_i."""
    if point.steps is not None:
        return float(point.steps)
    if point.epochs is None:
        raise ValueError(f"reference point at batch {point.global_batch} needs steps or epochs")
    return point.epochs * _dataset_samples(workload, "reference point epochs") / point.global_batch


def _one_point(points: list[tuple[float, float]], batch: int,
               b_crit: float) -> tuple[float, float, tuple[Note, ...]]:
    """S_min, E_min from the point nearest `batch` (in log batch) and a given b_crit, and the parts saying so."""
    b1, s1 = min(points, key=lambda p: abs(math.log(p[0] / batch)))
    s_min = s_min_from_one_point(b1, s1, b_crit)
    how = (detail("mccandlish_one", batch=b1, steps=s1, b_crit=b_crit),
           detail("s_min", s_min=s_min, e_min=b_crit * s_min))
    return s_min, b_crit * s_min, how


def _outside_range_notes(points: list[tuple[float, float]], batch: int) -> list[Note]:
    low, high = min(b for b, _ in points), max(b for b, _ in points)
    if low <= batch <= high:
        return []
    return [Note("outside_reference", batch=int(batch), low=low, high=high)]


def _b_crit_notes(batch: float, b_crit: float | None) -> tuple[Note, ...]:
    """Far past b_crit the run takes ~S_min steps whatever the batch (docs/methods.md#convergence)."""
    if not b_crit or batch <= FAR_PAST_B_CRIT * b_crit:
        return ()
    return (Note("past_b_crit", ratio=round(batch / b_crit, 1), b_crit=b_crit),)


def _dataset_samples(workload: Workload, needed_by: str) -> int:
    if not workload.dataset_samples:
        raise CannotEstimate("workload.dataset_samples", f"the dataset size in samples ({needed_by} need it)")
    return workload.dataset_samples


def _num(x: float) -> str:
    """Readable count: thousands separators at 100 and above, three significant digits below."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"
