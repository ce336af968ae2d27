"""Summary statistics of a list of step times: median, p10, p90, mean, std (sample), n; raw times and noise."""

from __future__ import annotations

import math
from collections.abc import Sequence

# The result-file schema owns the definitions a reader recomputes (percentile method, noise threshold).
from planner.inputs.resultfile import NOISY_IQR_OVER_MEDIAN, iqr_over_median, is_noisy, percentile
from planner.vocab import Reason

__all__ = ["NOISY_IQR_OVER_MEDIAN", "noise_warning", "percentile", "step_time_block", "summarize"]


def summarize(values: Sequence[float]) -> dict:
    """{median, p10, p90, mean, std, n}; std is the sample standard deviation (0 for one value)."""
    n = len(values)
    if n == 0:
        raise ValueError("summarize needs at least one value")
    mean = math.fsum(values) / n
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return {
        "median": percentile(values, 50),
        "p10": percentile(values, 10),
        "p90": percentile(values, 90),
        "mean": mean,
        "std": math.sqrt(var),
        "n": n,
    }


def step_time_block(values: Sequence[float]) -> tuple[dict, bool]:
    """(the /2 `step_time_s` block, noisy): the summary plus every raw time and IQR/median."""
    block = summarize(values)
    ratio = iqr_over_median(values)
    block.update(raw=[float(v) for v in values], iqr_over_median=ratio)
    return block, is_noisy(ratio)


def noise_warning(block: dict, *, precision: str | None = None, batch: int, processes: int | None = None) -> Reason:
    """The file's `warnings` entry for a noisy measurement (bench run: its precision; bench ddp: its processes)."""
    numbers = {"batch": batch, "iqr_pct": round(100 * block["iqr_over_median"], 1),
               "limit_pct": round(100 * NOISY_IQR_OVER_MEDIAN), "n": block["n"]}
    if processes is not None:
        return Reason("noisy_ddp_steps", processes=processes, **numbers)
    return Reason("noisy_steps", precision=str(precision), **numbers)
