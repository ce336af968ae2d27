"""The one weighted least-squares straight line behind the engine's fits (memory peaks, step times, McCandlish)."""

from __future__ import annotations

from collections.abc import Sequence

from planner.inputs.errors import FitError


def least_squares_line(points: Sequence[tuple[float, float]],
                       weights: Sequence[float] | None = None) -> tuple[float, float]:
    """(intercept a, slope b) of y = a + b·x minimising Σ w_i·(y_i − a − b·x_i)²; every w_i = 1 without weights.

    Centred normal equations (Press et al., Numerical Recipes, 3rd ed. 2007, §15.2 "Fitting Data to a Straight
    Line": taking the weighted mean of x out first avoids the round-off of the raw sums Σx², Σxy):
    x̄ = Σw·x/Σw, ȳ = Σw·y/Σw, b = Σw·(x − x̄)(y − ȳ) / Σw·(x − x̄)², a = ȳ − b·x̄. Two passes: O(n).
    Pure. Raises FitError when the points do not define a line (none, or fewer than two distinct x).
    """
    ws = [1.0] * len(points) if weights is None else list(weights)
    if len(ws) != len(points):
        raise FitError(f"{len(ws)} weights for {len(points)} points")
    w_sum = sum(ws)
    if not points or not w_sum > 0:
        raise FitError("a least-squares line needs points with positive total weight")
    x_mean = sum(w * x for w, (x, _) in zip(ws, points, strict=True)) / w_sum
    y_mean = sum(w * y for w, (_, y) in zip(ws, points, strict=True)) / w_sum
    sxx = sum(w * (x - x_mean) ** 2 for w, (x, _) in zip(ws, points, strict=True))
    if sxx == 0.0:
        raise FitError("a least-squares line needs points at two or more different x")
    sxy = sum(w * (x - x_mean) * (y - y_mean) for w, (x, y) in zip(ws, points, strict=True))
    slope = sxy / sxx
    return y_mean - slope * x_mean, slope
