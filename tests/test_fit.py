"""The engine's one least-squares line, the activation-line split search built on it, and how both grow with n."""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine import steptime
from planner.engine.estimates import Source, TimePoint
from planner.engine.fit import least_squares_line
from planner.engine.memory import _best_flat_split, fit_activation_line
from planner.inputs.errors import FitError

# ---------------------------------------------------------------- least_squares_line, by hand


def test_exact_line():
    # y = 1 + 2x through (1, 3), (2, 5), (4, 9)
    assert least_squares_line([(1, 3.0), (2, 5.0), (4, 9.0)]) == pytest.approx((1.0, 2.0))


def test_weighted_line_by_hand():
    # (0, 1), (1, 2), (2, 4) with weights 1, 1, 2: x̄ = (0 + 1 + 4)/4 = 1.25, ȳ = (1 + 2 + 8)/4 = 2.75;
    # Σw(x−x̄)² = 1.5625 + 0.0625 + 2·0.5625 = 2.75; Σw(x−x̄)(y−ȳ) = 2.1875 + 0.1875 + 2·0.9375 = 4.25;
    # slope = 4.25/2.75 = 17/11, intercept = 2.75 − 17/11 · 1.25 = 9/11.
    assert least_squares_line([(0, 1.0), (1, 2.0), (2, 4.0)], [1.0, 1.0, 2.0]) == pytest.approx((9 / 11, 17 / 11))


def test_a_weight_of_two_counts_a_point_twice():
    points = [(1, 2.0), (3, 3.5), (7, 9.0)]
    doubled = least_squares_line([*points, points[1]])
    assert least_squares_line(points, [1.0, 2.0, 1.0]) == pytest.approx(doubled, rel=1e-12)


def test_no_line_raises_fit_error():
    with pytest.raises(FitError, match="two or more different x"):
        least_squares_line([(3, 1.0), (3, 2.0)])
    with pytest.raises(FitError):
        least_squares_line([])
    with pytest.raises(FitError, match="2 weights for 3 points"):
        least_squares_line([(1, 1.0), (2, 2.0), (3, 3.0)], [1.0, 1.0])


# ---------------------------------------------------------------- the O(n) split search = the exhaustive one


def _averaged(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    by_batch: dict[int, list[float]] = {}
    for b, p in points:
        by_batch.setdefault(b, []).append(p)
    return sorted((b, sum(v) / len(v)) for b, v in by_batch.items())


def _exhaustive_split(pts: list[tuple[int, float]]) -> tuple[int | None, dict[int, float], float]:
    """The search fit_activation_line replaced (a line fit and a residual pass per split: O(n²)), kept here as
    the reference: its split, every rising split's squared error from the residuals, and the steepest rise."""
    best, errors, steepest = None, {}, 0.0
    for k in range(len(pts) - 1):
        flat, rest = pts[:k], pts[k:]
        m0, slope = least_squares_line(rest)
        if slope <= 0:
            continue
        steepest = max(steepest, slope * (rest[-1][0] - rest[0][0]))
        level = sum(p for _, p in flat) / k if k else 0.0
        errors[k] = sum((p - level) ** 2 for _, p in flat) + sum((p - m0 - slope * b) ** 2 for b, p in rest)
        if best is None or errors[k] < errors[best] * (1 - 1e-9) - 1e-6:
            best = k
    return best, errors, steepest


@st.composite
def peak_sweeps(draw: st.DrawFn) -> list[tuple[int, float]]:
    """Measured peaks over a batch sweep: a flat optimizer-step plateau, then a rising line, with noise."""
    batches = draw(st.lists(st.integers(1, 512), min_size=1, max_size=12))
    m0 = draw(st.floats(1e8, 4e10))
    slope = draw(st.floats(-1e7, 2e9))
    plateau = draw(st.floats(0.0, 8e10))
    noise = draw(st.sampled_from([0.0, 1e-4, 1e-2]))
    rng = random.Random(draw(st.integers(0, 2**16)))
    return [(b, max(plateau, m0 + slope * b) * (1 + noise * (rng.random() - 0.5))) for b in batches]


@settings(max_examples=300, deadline=None)
@given(peak_sweeps())
def test_split_search_picks_what_the_exhaustive_search_picks(points):
    pts = _averaged(points)
    line = fit_activation_line(points, 0.0, "bf16", Source("measured"))
    k_old, errors, steepest = _exhaustive_split(pts)
    k_new = _best_flat_split(pts)
    if k_old is None:
        assert k_new is None and line is None
        return
    if k_new is None:  # the old search took a rise of rounding size (equal peaks) for a line; "no growth" now
        assert steepest <= 1e-12 * max(abs(p) for _, p in pts) and line is None
        return
    if k_new != k_old:  # only a tie at rounding level may be broken the other way
        mean = sum(p for _, p in pts) / len(pts)
        total = sum((p - mean) ** 2 for _, p in pts)
        assert abs(errors[k_new] - errors[k_old]) <= 1e-12 * total + 1e-6, (k_new, k_old, errors)
    m0, slope = least_squares_line(pts[k_new:])
    assert line is not None
    assert (line.bytes_per_sample, line.intercept_bytes) == (slope, max(0.0, m0))


# ---------------------------------------------------------------- growth with the number of measurements


def _peaks(n: int) -> list[tuple[int, float]]:
    rng = random.Random(0)
    return [(b, max(13.5e9, 12e9 + 0.5e9 * b) * (1 + 1e-3 * (rng.random() - 0.5))) for b in range(1, n + 1)]


def _times(n: int) -> list[TimePoint]:
    rng = random.Random(0)
    return [TimePoint(2 * i, (0.004 + 0.001 * i) * (1 + 0.01 * (rng.random() - 0.5)), "t.json")
            for i in range(1, n + 1)]


def _best_cpu_seconds(runs: list[Callable[[], object]], repeats: int) -> list[float]:
    """Best-of-`repeats` CPU seconds of each run, the runs interleaved so a busy spell on a shared machine hits
    all of them alike; process time, not wall time, so other processes' load does not count."""
    best = [float("inf")] * len(runs)
    gc.disable()
    try:
        for _ in range(repeats):
            for i, run in enumerate(runs):
                t0 = time.process_time()
                run()
                best[i] = min(best[i], time.process_time() - t0)
    finally:
        gc.enable()
    return best


@pytest.mark.parametrize("fit", ["activation line", "step-time line"])
def test_doubling_the_measurements_less_than_triples_the_fit_time(fit):
    # Issue 12: a 13 MB result file took 19 s to plan (a fit per split point: O(n²)). Linear work doubles
    # with n, quadratic quadruples: < 3x tells them apart with room for a noisy shared machine.
    if fit == "activation line":
        small, large = _peaks(2000), _peaks(4000)

        def run(pts):
            return lambda: fit_activation_line(pts, 1e9, "bf16", Source("measured"))
    else:
        small, large = _times(2000), _times(4000)

        def run(pts):
            return lambda: steptime.measured_micro_step(pts, len(pts) + 1)  # between two measured batches
    t_small, t_large = _best_cpu_seconds([run(small), run(large)], repeats=5)
    assert t_large < 3 * t_small, f"{fit}: n = 2000 took {t_small:.4f} s, 4000 took {t_large:.4f} s"
