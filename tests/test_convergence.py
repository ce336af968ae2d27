"""Steps to target: epochs/tokens arithmetic and the McCandlish et al. 2018 fit (docs/methods.md#convergence)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.engine.convergence import (
    CAVEATS,
    ConvergenceFitError,
    estimate_convergence,
    fit_mccandlish,
    fit_reference_points,
    lr_advice,
    s_min_from_one_point,
    steps_at_batch,
)
from planner.inputs.convergence_calibration import ConvergenceCalibration
from planner.inputs.scenario import ReferencePoint, Workload
from tests.notes_support import detail_en, english, texts, texts_of_triple  # noqa: F401

# A calibration with round numbers, so the arithmetic below is checkable by hand: seed spread -5%/+5% (h_seed =
# -ln 0.95), gamma 0.15, k 0.1 per unit of ln(batch distance).
CAL = ConvergenceCalibration(large_batch_exponent=0.15, seed_spread_p10=-0.05, seed_spread_p90=0.05,
                             extrapolation_per_log_batch=0.1, n_benchmarks=1, n_heldout_points=1, source="test")


def _curve(s_min: float, e_min: float, batches: list[float]) -> list[tuple[float, float]]:
    return [(b, s_min + e_min / b) for b in batches]


# ---------------------------------------------------------------- formulas

def test_steps_at_batch_is_s_min_plus_e_min_over_b():
    # S(B) = S_min + E_min/B: at B = b_crit = E_min/S_min a run takes 2 S_min steps (docs/methods.md#convergence).
    assert steps_at_batch(1000, 4e6, 4000) == 2000
    assert steps_at_batch(1000, 4e6, 1000) == 5000


def test_fit_two_points_is_exact():
    s_min, e_min = fit_mccandlish([(1000, 5000), (8000, 1500)])  # S_min 1000, E_min 4e6 by hand
    assert s_min == pytest.approx(1000, rel=1e-12)
    assert e_min == pytest.approx(4e6, rel=1e-12)


def test_fit_four_noise_free_points_recovers_the_curve():
    points = _curve(1200.0, 9.6e6, [256, 1024, 4096, 16384])
    s_min, e_min = fit_mccandlish(points)
    assert s_min == pytest.approx(1200.0, rel=1e-9)
    assert e_min == pytest.approx(9.6e6, rel=1e-9)


@given(
    s_min=st.floats(10, 1e6),
    b_crit=st.floats(16, 1e6),
    batches=st.lists(st.integers(1, 2**22), min_size=2, max_size=6, unique=True),
)
def test_fit_recovers_any_noise_free_curve(s_min, b_crit, batches):
    s_hat, e_hat = fit_mccandlish(_curve(s_min, s_min * b_crit, batches))
    assert s_hat == pytest.approx(s_min, rel=1e-6)
    assert e_hat == pytest.approx(s_min * b_crit, rel=1e-6)


def test_fit_of_noisy_points_minimises_relative_squared_error():
    # Weights 1/S_i^2 make the fit minimise sum((S_i - S(B_i))/S_i)^2: any nearby (S_min, E_min) does worse.
    points = [(256, 40000.0), (1024, 11000.0), (4096, 3300.0), (16384, 1500.0)]
    s_min, e_min = fit_mccandlish(points)

    def relative_sse(a: float, b: float) -> float:
        return sum(((s - (a + b / bb)) / s) ** 2 for bb, s in points)

    best = relative_sse(s_min, e_min)
    for ds, de in [(1.01, 1), (0.99, 1), (1, 1.01), (1, 0.99), (1.01, 0.99), (0.99, 1.01)]:
        assert relative_sse(s_min * ds, e_min * de) > best


def test_steps_falling_faster_than_one_over_b_fit_perfect_scaling():
    # Was a ConvergenceFitError ("b_crit above the largest measured batch"); perfect scaling is valid data now.
    # The free fit needs S_min = 10000 - 6000*512/256 = -2000 < 0, so S_min = 0 and E_min is the unweighted fit of
    # S = E/B through the origin: E = (10000/256 + 4000/512) / (1/256^2 + 1/512^2) = 2,457,600.
    assert fit_mccandlish([(256, 10000), (512, 4000)]) == (0.0, pytest.approx(2_457_600))


def test_three_perfect_scaling_points_fit_through_the_origin_with_relative_weights():
    # Exactly S = 1e6/B: S_min 0, E_min 1e6 whatever the weights.
    assert fit_mccandlish(_curve(0.0, 1e6, [256, 1024, 4096])) == (0.0, pytest.approx(1e6))
    # Noisy: E = sum(x/S) / sum(x^2/S^2) with x = 1/B (weights 1/S^2) — by hand for these three points.
    points = [(256, 4000.0), (1024, 900.0), (4096, 200.0)]  # the free fit: S_min = -46
    num = sum((1 / b) / s for b, s in points)
    den = sum((1 / b) ** 2 / s**2 for b, s in points)
    s_min, e_min = fit_mccandlish(points)
    assert s_min == 0.0 and e_min == pytest.approx(num / den)
    fit = fit_reference_points(points)
    assert fit.perfect_scaling and fit.b_crit is None and (fit.low_batch, fit.high_batch) == (256, 4096)


def test_fit_refuses_steps_that_grow_with_batch():
    with pytest.raises(ConvergenceFitError, match="b_crit is beyond the measured range") as err:
        fit_mccandlish([(256, 1000), (512, 1000), (1024, 1100)])
    assert "below the smallest measured batch" in str(err.value)


def test_fit_needs_two_different_batches():
    with pytest.raises(ConvergenceFitError, match="two or more"):
        fit_mccandlish([(256, 1000)])
    with pytest.raises(ConvergenceFitError, match="different batch sizes"):
        fit_mccandlish([(256, 1000), (256, 1100)])


def test_s_min_from_one_point_and_b_crit():
    # S_min = S_1/(1 + b_crit/B_1) = 5000/(1 + 4096/1024) = 1000.
    assert s_min_from_one_point(1024, 5000, 4096) == pytest.approx(1000)


# ---------------------------------------------------------------- estimate_convergence

def test_epochs_become_steps_rounded_up():
    w = Workload(dataset_samples=1_281_167, epochs=90, early_stop_fraction=0.5)
    est = estimate_convergence(w, 256, None)
    assert est.steps == 450_411  # ceil(90 * 1,281,167 / 256 = 450,410.27)
    assert est.epochs == 90
    assert est.samples == 90 * 1_281_167
    assert est.source.kind == "user"
    assert detail_en(est.source) == "90 epochs x 1,281,167 samples / 256"
    assert est.steps_range is None  # the user's count: no band to invent


def test_epochs_without_dataset_size_is_an_error():
    with pytest.raises(ValueError, match="workload.dataset_samples"):
        estimate_convergence(Workload(epochs=3), 256, None)


def test_tokens_become_steps_with_seq_len():
    est = estimate_convergence(Workload(tokens=1e10, dataset_samples=1_000_000), 512, 1024)
    assert est.steps == 19_074  # ceil(1e10 / (512 * 1024) = 19,073.49)
    assert est.samples == pytest.approx(1e10 / 1024)
    assert est.epochs == pytest.approx(1e10 / 1024 / 1_000_000)
    assert est.source.kind == "user"


def test_tokens_without_seq_len_names_the_field():
    with pytest.raises(ValueError, match=r"model\.transformer\.seq_len"):
        estimate_convergence(Workload(tokens=1e10), 512, None)


def test_reference_points_fit_with_epochs_and_steps():
    # D = 1e6; 5 epochs at B = 1000 is 5000 steps; with 1500 steps at 8000: S_min 1000, E_min 4e6, b_crit 4000.
    w = Workload(dataset_samples=1_000_000, reference_points=(
        ReferencePoint(global_batch=1000, epochs=5), ReferencePoint(global_batch=8000, steps=1500)))
    est = estimate_convergence(w, 4000, None, calibration=CAL)
    assert est.steps == 2000  # 2 S_min at b_crit
    assert est.b_crit == pytest.approx(4000)
    assert est.s_min == pytest.approx(1000)
    assert est.e_min == pytest.approx(4e6)
    assert est.samples == 2000 * 4000
    assert est.epochs == pytest.approx(8.0)
    assert est.source.kind == "analytic"
    assert detail_en(est.source) == "McCandlish et al. 2018 fit of 2 points; S_min=1,000, E_min=4,000,000"
    # Exact fit, inside the reference batches: the seed spread alone, 2000 x 0.95 to 2000 / 0.95.
    assert est.steps_range == pytest.approx((1900, 2000 / 0.95))
    assert "steps range -5%/+5%: the seed spread of MLPerf's reference runs (±5%) or the fit's largest residual (0%)" \
        in texts(est.notes)[0]
    for caveat in CAVEATS:
        assert caveat in est.notes
    assert not any("past b_crit" in n for n in texts(est.notes))


def test_b_crit_note_quotes_its_numbers():
    w = Workload(dataset_samples=1_000_000, reference_points=(
        ReferencePoint(global_batch=1000, steps=5000), ReferencePoint(global_batch=8000, steps=1500)))
    est = estimate_convergence(w, 32000, None, calibration=CAL)
    assert est.steps == 1154  # 1000 + (4e6/32000) x 4^0.15 = 1000 + 125 x 1.2311 = 1153.9 (eq. 2.11 alone: 1125)
    assert "batch 8x past b_crit (4,000): more GPUs buy little time" in texts(est.notes)
    assert any("outside the reference batches (1,000-8,000)" in n for n in texts(est.notes))
    assert ("batch 4x the largest reference batch (8,000): 1,154 steps instead of the fit's 1,125 (+3%)"
            in texts(est.notes)[0])
    # Range: h = hypot(-ln 0.95, 0.1 x ln 4) = hypot(0.0513, 0.1386) = 0.1478.
    h = math.hypot(-math.log(0.95), 0.1 * math.log(4))
    assert est.steps_range == pytest.approx((1154 * math.exp(-h), 1154 * math.exp(h)))


def test_the_correction_applies_only_past_the_largest_reference_batch():
    w = Workload(reference_points=(ReferencePoint(global_batch=1000, steps=5000),
                                   ReferencePoint(global_batch=8000, steps=1500)))
    assert estimate_convergence(w, 8000, None, calibration=CAL).steps == 1500
    assert estimate_convergence(w, 500, None, calibration=CAL).steps == 9000  # 1000 + 4e6/500: no correction
    low, high = estimate_convergence(w, 500, None, calibration=CAL).steps_range
    assert math.log(high / 9000) == pytest.approx(math.hypot(-math.log(0.95), 0.1 * math.log(2)))
    assert not any("largest reference batch" in n for n in texts(estimate_convergence(w, 500, None).notes))


def test_the_shipped_calibration_is_read_by_default():
    w = Workload(reference_points=(ReferencePoint(global_batch=1000, steps=5000),
                                   ReferencePoint(global_batch=8000, steps=1500)))
    assert estimate_convergence(w, 32000, None).steps > 1125  # the shipped gamma is positive
    assert any("MLPerf" in n for n in texts(estimate_convergence(w, 4000, None).notes))


def test_b_crit_note_for_user_epochs_with_given_b_crit():
    w = Workload(dataset_samples=1_281_167, epochs=90, b_crit=40000)
    est = estimate_convergence(w, 320000, None)
    assert "batch 8x past b_crit (40,000): more GPUs buy little time" in texts(est.notes)
    assert est.b_crit == 40000
    assert estimate_convergence(w, 80000, None).notes == ()  # exactly 2x: not "far past"


def test_one_reference_point_with_b_crit():
    w = Workload(reference_points=(ReferencePoint(global_batch=1024, steps=5000),), b_crit=4096)
    est = estimate_convergence(w, 4096, None)
    assert est.s_min == pytest.approx(1000)
    assert est.steps == 2000
    assert "one point (batch 1,024, 5,000 steps) with b_crit 4,096" in detail_en(est.source)


def test_one_reference_point_without_b_crit_is_an_error():
    w = Workload(reference_points=(ReferencePoint(global_batch=1024, steps=5000),))
    with pytest.raises(ValueError, match="workload.b_crit"):
        estimate_convergence(w, 4096, None)


def test_failed_fit_raises_without_b_crit_and_falls_back_with_it():
    # Steps rising with the batch (E_min <= 0): still an error without b_crit (these points were S_min <= 0 before
    # perfect scaling became valid data: 256 -> 10000, 512 -> 4000).
    points = (ReferencePoint(global_batch=256, steps=1000), ReferencePoint(global_batch=512, steps=1100))
    with pytest.raises(ConvergenceFitError, match="below the smallest measured batch"):
        estimate_convergence(Workload(reference_points=points), 512, None)
    est = estimate_convergence(Workload(reference_points=points, b_crit=2048), 512, None)
    assert est.s_min == pytest.approx(1100 / (1 + 2048 / 512))  # nearest point: 512
    assert est.steps == 1100
    assert any("used workload.b_crit (2,048)" in n for n in texts(est.notes))


def test_two_perfect_scaling_points_plan_without_b_crit():
    # 256 -> 10000 steps, 512 -> 5000: steps x batch constant, S_min 0, E_min 2,560,000, b_crit unknown.
    points = (ReferencePoint(global_batch=256, steps=10000), ReferencePoint(global_batch=512, steps=5000))
    est = estimate_convergence(Workload(reference_points=points), 2048, None, calibration=CAL)
    assert est.s_min == 0.0 and est.e_min == pytest.approx(2_560_000) and est.b_crit is None
    # Past the reference points the corrected curve: (2,560,000/2048) x 4^0.15 = 1250 x 1.2311 = 1538.9.
    assert est.steps == 1539
    notes = texts(est.notes)
    assert any("show perfect scaling (steps × batch constant from 256 to 512" in n for n in notes)
    assert any("no evidence of where it stops" in n for n in notes)
    assert not any("past b_crit" in n for n in notes)


def test_three_perfect_scaling_points_plan_and_a_given_b_crit_says_where_it_stops():
    points = tuple(ReferencePoint(global_batch=b, steps=s) for b, s in ((256, 4000), (1024, 900), (4096, 200)))
    est = estimate_convergence(Workload(reference_points=points), 4096, None, calibration=CAL)
    assert est.s_min == 0.0 and est.b_crit is None and est.steps == pytest.approx(est.e_min / 4096, abs=1)
    with_b_crit = estimate_convergence(Workload(reference_points=points, b_crit=8192), 4096, None,
                                       calibration=CAL)
    assert with_b_crit.b_crit == 8192
    assert with_b_crit.s_min == pytest.approx(200 / (1 + 8192 / 4096))  # eq. 2.11 at the nearest point, 4096
    assert any("perfect scaling up to 4,096; used workload.b_crit (8,192)" in n for n in texts(with_b_crit.notes))


def test_noisy_fit_widens_the_band_to_its_residuals():
    points = (ReferencePoint(global_batch=256, steps=40000), ReferencePoint(global_batch=1024, steps=8000),
              ReferencePoint(global_batch=4096, steps=4500))
    est = estimate_convergence(Workload(reference_points=points), 1024, None, calibration=CAL)
    low, high = est.steps_range
    fitted = est.s_min + est.e_min / 1024
    residual = max(abs(math.log(s / (est.s_min + est.e_min / b))) for b, s in ((256, 40000), (1024, 8000),
                                                                              (4096, 4500)))
    assert residual > -math.log(0.95)  # the residual, not the seed spread, sets the width
    assert math.log(high / est.steps) == pytest.approx(residual)
    assert math.isclose(math.log(est.steps / low), math.log(high / est.steps))  # symmetric in log steps
    assert est.steps == math.ceil(fitted)


# ---------------------------------------------------------------- learning-rate advice

def test_lr_advice_linear_for_sgd_with_warm_up():
    text = " | ".join(english(n) for n in lr_advice("sgd_momentum", 256, 8192, None, samples_per_epoch=1_281_167))
    assert "linear scaling" in text and "Goyal et al. 2017" in text
    assert "by 32" in text
    # 5 epochs of 1,281,167 samples at batch 8,192 = 782 steps
    assert "first 5 epochs, 782 steps at this batch" in text


def test_lr_advice_square_root_for_adam_family():
    text = " | ".join(english(n) for n in lr_advice("adamw", 256, 1024, None))
    assert "square-root" in text and "Malladi et al. 2022" in text
    assert "by 2" in text
    assert "multiply its steps by 0.25" in text  # the warm-up keeps its samples


def test_lr_advice_noise_scale_fraction():
    # eps_opt/eps_max = 1/(1 + B_noise/B) = 1/(1 + 4096/4096) = 50%.
    assert "about 50 % of its large-batch maximum" in " ".join(english(n) for n in lr_advice("sgd", None, 4096, 4096))


def test_lr_advice_unknown_optimizer():
    with pytest.raises(ValueError, match="unknown optimizer"):
        lr_advice("lion", 256, 512, None)


# ---------------------------------------------------------------- perfect scaling through a whole plan

@pytest.mark.parametrize("points", [
    [{"global_batch": 256, "epochs": 90}, {"global_batch": 8192, "epochs": 60}],  # steps fall faster than 1/B
    [{"global_batch": 256, "epochs": 90}, {"global_batch": 1024, "epochs": 90}, {"global_batch": 4096, "epochs": 89}],
])
def test_perfect_scaling_reference_points_plan(tmp_path, points):
    """Goyal et al. 2017-style points (the same epochs at every batch) plan instead of failing the whole plan."""
    import datetime as dt

    from planner.engine.plan import build_plan
    from planner.inputs.folders import load_inputs
    from planner.inputs.scenario import parse_scenario

    scenario = parse_scenario({
        "schema": "trainplan.scenario/1", "name": "perfect scaling",
        "model": {"name": "resnet50", "activation_bytes_per_sample": 1.1e8, "activation_precision": "bf16"},
        "training": {"global_batch": 16384, "precisions": ["bf16"], "optimizer": "sgd_momentum"},
        "workload": {"dataset_samples": 1281167, "reference_points": points},
        "hardware": {"gpus": ["h100-sxm-80gb"], "gpu_counts": [8]},
    }, "perfect.yaml")
    plan = build_plan(scenario, load_inputs([tmp_path], include_user_data=False), dt.date(2026, 11, 29))
    conv = plan.options[0].convergence
    assert conv.s_min == 0.0 and conv.b_crit is None and conv.steps > 0
    low, high = conv.steps_range
    assert low < conv.steps < high
    assert any("no evidence of where it stops" in n for n in texts(plan.assumptions))
    assert any(o.fits and o.cost.hours > 0 for o in plan.options)


def test_points_that_contradict_each_other_are_not_called_perfect_scaling():
    """A reviewer's case: 1000 steps at 256, 100 at 512, 900 at 1024 fit S_min <= 0; through the origin they would
    plan 241 steps at batch 256 where the point itself says 1000. Refused, naming the miss."""
    with pytest.raises(ConvergenceFitError, match="do not follow one curve"):
        fit_mccandlish([(256.0, 1000.0), (512.0, 100.0), (1024.0, 900.0)])
    # a few percent off perfect scaling is still perfect scaling
    s_min, e_min = fit_mccandlish([(256.0, 1000.0), (512.0, 490.0), (1024.0, 240.0)])
    assert s_min == 0.0 and e_min > 0
