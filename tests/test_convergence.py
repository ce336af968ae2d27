"""Steps to target: epochs/tokens arithmetic and the McCandlish et al. 2018 fit (ESTIMATION.md §4)."""

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
    lr_advice,
    s_min_from_one_point,
    steps_at_batch,
)
from planner.inputs.scenario import ReferencePoint, Workload
from tests.notes_support import english, texts, texts_of_triple  # noqa: F401


def _curve(s_min: float, e_min: float, batches: list[float]) -> list[tuple[float, float]]:
    return [(b, s_min + e_min / b) for b in batches]


# ---------------------------------------------------------------- formulas

def test_steps_at_batch_is_s_min_plus_e_min_over_b():
    # S(B) = S_min + E_min/B: at B = b_crit = E_min/S_min a run takes 2 S_min steps (ESTIMATION.md §4).
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


def test_fit_refuses_steps_falling_faster_than_one_over_b():
    # Halving the steps from 256 to 512 needs S_min = 10000 - 6000*512/256 = -2000 < 0: b_crit above 512.
    with pytest.raises(ConvergenceFitError, match="b_crit is beyond the measured range") as err:
        fit_mccandlish([(256, 10000), (512, 4000)])
    assert "above the largest measured batch" in str(err.value)
    assert isinstance(err.value, ValueError)


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
    assert est.source.detail == "90 epochs x 1,281,167 samples / 256"
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
    est = estimate_convergence(w, 4000, None)
    assert est.steps == 2000  # 2 S_min at b_crit
    assert est.b_crit == pytest.approx(4000)
    assert est.s_min == pytest.approx(1000)
    assert est.e_min == pytest.approx(4e6)
    assert est.samples == 2000 * 4000
    assert est.epochs == pytest.approx(8.0)
    assert est.source.kind == "analytic"
    assert est.source.detail == "McCandlish et al. 2018 fit of 2 points; S_min=1,000, E_min=4,000,000"
    assert est.steps_range == pytest.approx((1700, 2300))  # exact fit: the 15% floor
    for caveat in CAVEATS:
        assert caveat in est.notes
    assert not any("past b_crit" in n for n in texts(est.notes))


def test_b_crit_note_quotes_its_numbers():
    w = Workload(dataset_samples=1_000_000, reference_points=(
        ReferencePoint(global_batch=1000, steps=5000), ReferencePoint(global_batch=8000, steps=1500)))
    est = estimate_convergence(w, 32000, None)
    assert est.steps == 1125  # 1000 + 4e6/32000
    assert "batch 8x past b_crit (4,000): more GPUs buy little time" in texts(est.notes)
    assert any("outside the reference batches (1,000-8,000)" in n for n in texts(est.notes))


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
    assert "one point (batch 1,024, 5,000 steps) with b_crit 4,096" in est.source.detail


def test_one_reference_point_without_b_crit_is_an_error():
    w = Workload(reference_points=(ReferencePoint(global_batch=1024, steps=5000),))
    with pytest.raises(ValueError, match="workload.b_crit"):
        estimate_convergence(w, 4096, None)


def test_failed_fit_raises_without_b_crit_and_falls_back_with_it():
    points = (ReferencePoint(global_batch=256, steps=10000), ReferencePoint(global_batch=512, steps=4000))
    with pytest.raises(ConvergenceFitError, match="b_crit is beyond the measured range"):
        estimate_convergence(Workload(reference_points=points), 512, None)
    est = estimate_convergence(Workload(reference_points=points, b_crit=2048), 512, None)
    assert est.s_min == pytest.approx(4000 / (1 + 2048 / 512))  # nearest point: 512
    assert est.steps == 4000
    assert any("used workload.b_crit (2,048)" in n for n in texts(est.notes))


def test_noisy_fit_widens_the_band_to_its_residuals():
    points = (ReferencePoint(global_batch=256, steps=40000), ReferencePoint(global_batch=1024, steps=8000),
              ReferencePoint(global_batch=4096, steps=4500))
    est = estimate_convergence(Workload(reference_points=points), 1024, None)
    low, high = est.steps_range
    assert high / est.steps - 1 > 0.15
    assert math.isclose(1 - low / est.steps, high / est.steps - 1)


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
