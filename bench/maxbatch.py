"""Largest batch that fits: fit peak(b) on >= 3 sizes, predict, confirm in a few trials; then a safe batch a
margin below it, confirmed by a repeat run (pure logic).

peak(b) = max(M_step, M0 + b * m_act) (docs/methods.md#memory): the line is fitted on the largest sizes that ran, and
only once they are in the activation-dominated regime (the peak visibly grows with b); until then the probe size
grows geometrically. The search stops when the largest size that ran and the smallest that failed are within the
tolerance (default: adjacent sizes or 1%, whichever is larger).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from planner.vocab import Reason

OK = "ok"
FLAT_RISE = 0.05  # the peak must rise this much across the fitted sizes to count as activation-dominated


@dataclass(frozen=True)
class Trial:
    batch_size: int
    status: str                 # ok | oom | error
    peak_bytes: float | None = None


@dataclass(frozen=True)
class MaxBatchResult:
    max_batch: int              # 0 = not even batch 1 fits
    trials: tuple[Trial, ...]
    converged: bool
    reason: Reason | None = None
    fit: tuple[float, float] | None = None  # (intercept_bytes, bytes_per_sample)

    def trials_json(self) -> list[dict]:
        return [{"batch_size": t.batch_size, "status": t.status} for t in self.trials]


def fit_line(points: Iterable[tuple[int, float]]) -> tuple[float, float] | None:
    """Least-squares (intercept, slope) of peak over batch size; None with fewer than 2 distinct sizes.

    The standard library's ordinary least squares (statistics.linear_regression, Python >= 3.10): bench may not
    import the planner's engine, where the planner's own line lives.
    """
    pts = list(points)
    if len({b for b, _ in pts}) < 2:
        return None
    slope, intercept = statistics.linear_regression([float(b) for b, _ in pts], [float(p) for _, p in pts])
    return intercept, slope


def _collinear(pts: list[tuple[int, float]], rel_tol: float = 0.02) -> bool:
    (b0, p0), (b1, p1), (b2, p2) = pts
    on_line = p0 + (p2 - p0) * (b1 - b0) / (b2 - b0)
    return abs(p1 - on_line) <= rel_tol * max(p1, 1.0)


def _activation_fit(points: dict[int, float]) -> tuple[float, float] | None:
    """The line through the three largest sizes that ran (the two largest when the third is still on the
    optimizer-step plateau), if the peak grows with b there."""
    ordered = sorted(points.items())
    top = ordered[-3:]
    if len(top) == 3 and not _collinear(top):
        top = top[-2:]
    line = fit_line(top)
    if line is None or line[1] <= 0:
        return None
    lo_peak, hi_peak = top[0][1], top[-1][1]
    if lo_peak > 0 and (hi_peak - lo_peak) / lo_peak < FLAT_RISE:
        return None
    return line


def _resolution(lo: int, tol: float) -> int:
    return max(1, math.ceil(tol * lo))


def _next_candidate(points: dict[int, float], lo: int, hi: int | None, capacity: float, margin: float,
                    tol: float) -> tuple[int, tuple[float, float] | None]:
    line = _activation_fit(points)
    if line is None:
        guess = max(1, lo * 4)  # still in the optimizer-dominated regime: grow geometrically
    else:
        guess = math.floor((capacity * (1 - margin) - line[0]) / line[1])
    step = _resolution(lo, tol)
    if guess < lo + step:
        guess = lo + step  # the fit says lo is (about) the largest: confirm by trying just above it
    if hi is not None and guess >= hi:
        guess = (lo + hi) // 2  # the fit overestimates: fall back to bisection for this step
    return guess, line


def find_max_batch(try_batch: Callable[[int], Trial], capacity_bytes: float, probes: Iterable[int] = (1, 2, 4),
                   known: Iterable[Trial] = (), max_trials: int = 12, tol: float = 0.01, margin: float = 0.005,
                   limit: int = 65536) -> MaxBatchResult:
    """Search the largest batch that runs. `known` are earlier results (e.g. the sweep's) used for the fit but
    not counted as trials; `try_batch(b)` runs one short trial and reports its status and peak (reserved) bytes."""
    points: dict[int, float] = {}
    lo, hi = 0, None
    trials: list[Trial] = []

    def record(t: Trial, counted: bool) -> None:
        nonlocal lo, hi
        if counted:
            trials.append(t)
        if t.status == OK:
            lo = max(lo, t.batch_size)
            if t.peak_bytes is not None:
                points[t.batch_size] = float(t.peak_bytes)
        else:
            hi = t.batch_size if hi is None else min(hi, t.batch_size)

    for t in known:
        record(t, counted=False)
    for b in sorted(set(probes)):
        if len(points) >= 3 or (hi is not None and b >= hi) or b in points or len(trials) >= max_trials:
            continue
        record(try_batch(b), counted=True)
    while lo == 0 and len(trials) < max_trials and (hi is None or hi > 1):
        b = 1 if hi is None else max(1, hi // 2)  # even the smallest probe failed: halve down to 1
        record(try_batch(b), counted=True)
    if lo == 0:
        return MaxBatchResult(0, tuple(trials), hi == 1, None if hi == 1 else Reason("no_size_within_budget"))

    line = None
    while len(trials) < max_trials:
        if hi is not None and hi - lo <= _resolution(lo, tol):
            return MaxBatchResult(lo, tuple(trials), True, None, _activation_fit(points) or line)
        b, line = _next_candidate(points, lo, hi, capacity_bytes, margin, tol)
        if b > limit:
            if lo >= limit:
                return MaxBatchResult(lo, tuple(trials), False, Reason("search_limit", limit=limit), line)
            b = limit
        record(try_batch(b), counted=True)
    converged = hi is not None and hi - lo <= _resolution(lo, tol)
    reason = None if converged else (Reason("search_stopped", trials=len(trials), ran=lo, failed=hi) if hi
                                     else Reason("search_stopped_none_failed", trials=len(trials), ran=lo))
    return MaxBatchResult(lo, tuple(trials), converged, reason, _activation_fit(points) or line)


# ---------------------------------------------------------------- the safe batch

# Why the safe batch sits below the largest that ran: that size passed one short trial. A long run at it can still
# run out of memory: the caching allocator fragments as tensors of different sizes come and go (reserved creeps
# above allocated), and the peak varies from run to run (cuDNN/cuBLAS algorithm and workspace choices, kernels
# loaded lazily, other processes on the GPU). 90% leaves room for that; multiples of 8 are the shapes tensor cores
# and training recipes use.
SAFE_FRACTION = 0.9
SAFE_MULTIPLE = 8
SAFE_ATTEMPTS = 3  # after an OOM on the repeat run, step down by the margin again, at most this many runs


@dataclass(frozen=True)
class SafeBatch:
    batch_size: int | None      # None: no size passed its repeat run
    confirmed: bool
    trials: tuple[Trial, ...]   # the repeat runs, in order
    reason: Reason | None = None

    def trials_json(self) -> list[dict]:
        return [{"batch_size": t.batch_size, "status": t.status} for t in self.trials]


def safe_batch_size(largest: int, fraction: float = SAFE_FRACTION) -> int:
    """`fraction` of the largest batch that ran, rounded down to a multiple of 8 when that is >= 8 (at least 1)."""
    if largest < 1:
        return 0
    size = math.floor(largest * fraction)
    if size >= SAFE_MULTIPLE:
        size -= size % SAFE_MULTIPLE
    return max(1, size)


def confirm_safe_batch(try_batch: Callable[[int], Trial], largest: int, attempts: int = SAFE_ATTEMPTS,
                       fraction: float = SAFE_FRACTION) -> SafeBatch:
    """Run the safe size once more (a repeat run after the search); after an OOM, step down by the margin again."""
    if largest < 1:
        return SafeBatch(None, False, (), Reason("no_batch_fits"))
    trials: list[Trial] = []
    size = safe_batch_size(largest, fraction)
    for _ in range(attempts):
        trial = try_batch(size)
        trials.append(trial)
        if trial.status == OK:
            failed = [t.batch_size for t in trials if t.status != OK]
            why = Reason("repeat_run_failed", batches=", ".join(map(str, failed))) if failed else None
            return SafeBatch(size, True, tuple(trials), why)
        if trial.status != "oom" or size == 1:
            break
        size = safe_batch_size(size, fraction)
    tried = ", ".join(f"{t.batch_size} ({t.status})" for t in trials)
    return SafeBatch(None, False, tuple(trials), Reason("no_size_passed_repeat", tried=tried))


def auto_batches(max_batch: int, count: int = 4) -> list[int]:
    """Sizes for `--batch auto`: the (safe) maximum and its halvings (max, max/2, max/4, ...), ascending."""
    sizes = sorted({max(1, max_batch >> k) for k in range(count)})
    return [s for s in sizes if s >= 1] if max_batch >= 1 else []
