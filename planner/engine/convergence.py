"""Optimizer steps to the target: user counts or the McCandlish et al. 2018 large-batch model (ESTIMATION.md §4)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from planner.engine.estimates import ConvergenceEstimate, Source
from planner.engine.fit import least_squares_line
from planner.engine.notes import Note
from planner.inputs.errors import CannotEstimate, FitError
from planner.vocab import SGD_FAMILY

if TYPE_CHECKING:
    from planner.inputs.scenario import ReferencePoint, Workload

# A fit or a one-point estimate predicts steps to a target loss within roughly this fraction; the planner
# widens it to the fit's largest relative residual when that is larger. A planning assumption, not a
# published figure: it is shown with every fitted estimate (`steps_range`).
FIT_BAND_FRACTION = 0.15

# Past 2 b_crit, S(B) <= 1.5 S_min: doubling the batch again saves at most a sixth of the steps.
FAR_PAST_B_CRIT = 2.0

ADAM_FAMILY = ("adam", "adamw", "adam8bit", "adafactor")

CAVEATS = (Note("caveat_same_target"), Note("caveat_lr_retuned"), Note("caveat_b_crit_grows"))


class ConvergenceFitError(FitError):
    """The reference points do not give a usable McCandlish fit (S_min or E_min not positive)."""


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
    one at a large count. Raises ConvergenceFitError rather than extrapolate a non-positive S_min or E_min.
    """
    if len(points) < 2:
        raise ConvergenceFitError(f"a McCandlish fit needs two or more reference points, got {len(points)}")
    for b, s in points:
        if b <= 0 or s <= 0:
            raise ConvergenceFitError(f"reference point (batch {b}, steps {s}) must have a positive batch and steps")
    if len({b for b, _ in points}) < 2:
        raise ConvergenceFitError("a McCandlish fit needs reference points at two or more different batch sizes")
    line = [(1.0 / b, s) for b, s in points]
    weights = None if len(points) == 2 else [1.0 / s**2 for _, s in points]
    s_min, e_min = least_squares_line(line, weights)
    if s_min <= 0 or e_min <= 0:
        raise ConvergenceFitError(_fit_failure_message(points, s_min, e_min))
    return s_min, e_min


def _fit_failure_message(points: list[tuple[float, float]], s_min: float, e_min: float) -> str:
    batches = sorted(b for b, _ in points)
    span = f"batches {_num(batches[0])}-{_num(batches[-1])}"
    if s_min <= 0:
        why = (f"steps fall at least as fast as 1/B across {span} (fit S_min={_num(s_min)}), "
               "so b_crit lies above the largest measured batch")
    else:
        why = (f"steps do not fall as the batch grows across {span} (fit E_min={_num(e_min)}), "
               "so b_crit lies below the smallest measured batch")
    return (f"b_crit is beyond the measured range: {why}; not extrapolating. Add a reference point "
            "beyond that batch, or give workload.b_crit")


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
    if reference_batch:
        out.append(Note("lr_scale", rule=Note(rule), cite=cite, ref=_num(reference_batch), batch=_num(batch),
                        factor=f"{(batch / reference_batch) ** exponent:.3g}"))
    else:
        out.append(Note("lr_scale_unknown_ref", rule=Note(rule), cite=cite))
    if b_noise:
        out.append(Note("lr_noise_fraction", pct=round(100 * optimal_lr_fraction(b_noise, batch)),
                        b_noise=_num(b_noise)))
    if reference_batch and batch > reference_batch:
        if optimizer in SGD_FAMILY:
            steps = round(SGD_WARMUP_EPOCHS * samples_per_epoch / batch) if samples_per_epoch else None
            out.append(Note("lr_warmup_epochs", epochs=SGD_WARMUP_EPOCHS, steps=steps if steps else "?"))
        else:
            out.append(Note("lr_warmup_samples", factor=f"{reference_batch / batch:.3g}", ref=_num(reference_batch),
                            batch=_num(batch)))
    return tuple(out)


def optimal_lr_fraction(b_noise: float, batch: float) -> float:
    """eps_opt/eps_max = 1/(1 + B_noise/B) (McCandlish et al. 2018, optimal SGD step size)."""
    return 1.0 / (1.0 + b_noise / batch)


# ---------------------------------------------------------------- the estimate

def estimate_convergence(workload: Workload, global_batch: int, seq_len: int | None) -> ConvergenceEstimate:
    """Optimizer steps at `global_batch` to the workload's target; early_stop_fraction is applied by cost."""
    if global_batch <= 0:
        raise ValueError(f"global_batch must be positive, got {global_batch}")
    if workload.epochs is not None:
        return _from_epochs(workload, global_batch, workload.epochs)
    if workload.tokens is not None:
        return _from_tokens(workload, global_batch, workload.tokens, seq_len)
    if workload.reference_points:
        return _from_reference_points(workload, global_batch)
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
    detail = f"{epochs:g} epochs x {dataset:,} samples / {batch:,}"
    return ConvergenceEstimate(
        steps=steps, epochs=epochs, samples=epochs * dataset, source=Source("user", detail),
        b_crit=workload.b_crit, notes=_b_crit_notes(batch, workload.b_crit),
    )


def _from_tokens(workload: Workload, batch: int, tokens: float, seq_len: int | None) -> ConvergenceEstimate:
    if not seq_len:
        raise CannotEstimate("workload.tokens", "a model with a sequence length (model.transformer.seq_len, or a "
                             "zoo or result-file model that has one) to turn tokens into steps")
    steps = steps_for_tokens(tokens, batch, seq_len)
    samples = tokens / seq_len
    epochs = samples / workload.dataset_samples if workload.dataset_samples else None
    detail = f"{tokens:,.0f} tokens / ({batch:,} x {seq_len:,} tokens per sample)"
    return ConvergenceEstimate(
        steps=steps, epochs=epochs, samples=samples, source=Source("user", detail),
        b_crit=workload.b_crit, notes=_b_crit_notes(batch, workload.b_crit),
    )


def _from_reference_points(workload: Workload, batch: int) -> ConvergenceEstimate:
    points = [(float(p.global_batch), _point_steps(workload, p)) for p in workload.reference_points]
    notes: list[Note] = []
    if len(points) >= 2:
        try:
            s_min, e_min = fit_mccandlish(points)
        except ConvergenceFitError as exc:
            if workload.b_crit is None:
                raise
            s_min, e_min, detail = _one_point(points, batch, workload.b_crit)
            notes.append(Note("fit_fallback", error=str(exc), b_crit=workload.b_crit))
        else:
            detail = (f"McCandlish et al. 2018 fit of {len(points)} points; "
                      f"S_min={_num(s_min)}, E_min={_num(e_min)}")
            if workload.b_crit is not None:
                notes.append(Note("b_crit_ignored", given=workload.b_crit, fitted=e_min / s_min))
    else:
        if workload.b_crit is None:
            raise ValueError("one reference point needs workload.b_crit (or give two or more points)")
        s_min, e_min, detail = _one_point(points, batch, workload.b_crit)
    b_crit = e_min / s_min
    steps = math.ceil(steps_at_batch(s_min, e_min, batch) - 1e-9)
    band = max(FIT_BAND_FRACTION, _largest_relative_residual(points, s_min, e_min))
    notes.append(Note("steps_band", pct=round(band * 100), min_pct=round(FIT_BAND_FRACTION * 100)))
    notes += _outside_range_notes(points, batch)
    notes += _b_crit_notes(batch, b_crit)
    notes += CAVEATS
    dataset = workload.dataset_samples
    return ConvergenceEstimate(
        steps=steps, epochs=steps * batch / dataset if dataset else None, samples=steps * batch,
        source=Source("analytic", detail), b_crit=b_crit, steps_range=(steps * (1 - band), steps * (1 + band)),
        s_min=s_min, e_min=e_min, notes=tuple(notes),
    )


def _point_steps(workload: Workload, point: ReferencePoint) -> float:
    """A reference point's steps: given, or epochs * D / B_i."""
    if point.steps is not None:
        return float(point.steps)
    if point.epochs is None:
        raise ValueError(f"reference point at batch {point.global_batch} needs steps or epochs")
    return point.epochs * _dataset_samples(workload, "reference point epochs") / point.global_batch


def _one_point(points: list[tuple[float, float]], batch: int, b_crit: float) -> tuple[float, float, str]:
    """S_min, E_min from the point nearest `batch` (in log batch) and a given b_crit."""
    b1, s1 = min(points, key=lambda p: abs(math.log(p[0] / batch)))
    s_min = s_min_from_one_point(b1, s1, b_crit)
    detail = (f"McCandlish et al. 2018, one point (batch {_num(b1)}, {_num(s1)} steps) with b_crit {_num(b_crit)}; "
              f"S_min={_num(s_min)}, E_min={_num(b_crit * s_min)}")
    return s_min, b_crit * s_min, detail


def _largest_relative_residual(points: list[tuple[float, float]], s_min: float, e_min: float) -> float:
    return max(abs(s - steps_at_batch(s_min, e_min, b)) / s for b, s in points)


def _outside_range_notes(points: list[tuple[float, float]], batch: int) -> list[Note]:
    low, high = min(b for b, _ in points), max(b for b, _ in points)
    if low <= batch <= high:
        return []
    return [Note("outside_reference", batch=int(batch), low=low, high=high)]


def _b_crit_notes(batch: float, b_crit: float | None) -> tuple[Note, ...]:
    """Far past b_crit the run takes ~S_min steps whatever the batch (ESTIMATION.md §4)."""
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
