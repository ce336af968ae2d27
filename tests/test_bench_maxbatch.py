"""Max-batch search (fit, predict, confirm) against a fake linear memory model; doubling + bisection baseline."""

from __future__ import annotations

import pytest

from bench.maxbatch import (
    SAFE_FRACTION,
    Trial,
    auto_batches,
    confirm_safe_batch,
    find_max_batch,
    fit_line,
    safe_batch_size,
)
from bench.testing import FakeMemory
from perf.harness_vs_timer import doubling_bisection  # the baseline lives with the script comparing
from planner.vocab import Reason

GiB, MiB = 2**30, 2**20
CASES = {
    "resnet50-like": (0.4 * GiB, 75 * MiB, 139 * GiB, 0.5 * GiB),
    "gpt2-like": (2.5 * GiB, 1.3 * GiB, 139 * GiB, 2.6 * GiB),
    "linear": (1 * GiB, 20 * MiB, 24 * GiB, 0.0),
    "plateau then linear": (1 * GiB, 10 * MiB, 16 * GiB, 8 * GiB),
    "big model": (60 * GiB, 3 * GiB, 79.6 * GiB, 70 * GiB),
}


def test_fit_line_exact_and_degenerate():
    assert fit_line([(1, 12.0), (2, 14.0), (4, 18.0)]) == pytest.approx((10.0, 2.0))
    assert fit_line([(3, 1.0), (3, 2.0)]) is None
    # Not on a line: b = Σ(x−x̄)(y−ȳ)/Σ(x−x̄)², a = ȳ − b·x̄ with x̄ = 3, ȳ = 15.75:
    # Σ(x−x̄)(y−ȳ) = 7.5 + 1.25 + 1.25 + 7.5 = 17.5, Σ(x−x̄)² = 10 -> b = 1.75, a = 15.75 − 5.25 = 10.5.
    assert fit_line([(1, 12.0), (2, 14.5), (4, 17.0), (5, 19.5)]) == pytest.approx((10.5, 1.75), rel=1e-12)


@pytest.mark.parametrize("name", CASES)
def test_finds_the_true_maximum_within_tolerance(name):
    base, per_sample, capacity, step = CASES[name]
    mem = FakeMemory(base, per_sample, capacity, step_bytes=step)
    result = find_max_batch(mem, capacity)
    true = mem.true_max()
    assert result.converged
    assert true * 0.99 - 1 <= result.max_batch <= true  # never reports a size that failed
    assert len(result.trials) <= 12
    assert [t["batch_size"] for t in result.trials_json()] == mem.calls


@pytest.mark.parametrize("name", ["resnet50-like", "gpt2-like", "linear"])
def test_fewer_trials_than_doubling_and_bisection_from_one(name):
    base, per_sample, capacity, step = CASES[name]
    ours = find_max_batch(FakeMemory(base, per_sample, capacity, step), capacity)
    baseline = doubling_bisection(FakeMemory(base, per_sample, capacity, step))
    assert len(ours.trials) < len(baseline.trials) / 2


def test_known_sweep_points_are_used_and_not_counted():
    base, per_sample, capacity, step = CASES["resnet50-like"]
    mem = FakeMemory(base, per_sample, capacity, step)
    known = [Trial(b, "ok", mem.peak(b)) for b in (64, 128, 256)]
    result = find_max_batch(mem, capacity, known=known)
    assert 64 not in mem.calls and len(result.trials) <= 3 and result.converged


def test_nothing_fits():
    mem = FakeMemory(200 * GiB, GiB, 139 * GiB)
    result = find_max_batch(mem, 139 * GiB)
    assert result.max_batch == 0 and result.converged and mem.calls == [1]


def test_smallest_probe_fails_then_halves_down():
    mem = FakeMemory(10 * GiB, 1 * GiB, 13.5 * GiB)  # max 3
    result = find_max_batch(mem, 13.5 * GiB, probes=(8, 16, 32))
    assert result.max_batch == 3 and result.converged


def test_search_limit_is_reported():
    mem = FakeMemory(10 * MiB, 5000, 139 * GiB)
    result = find_max_batch(mem, 139 * GiB, limit=4096)
    assert result.max_batch == 4096 and not result.converged \
        and result.reason == Reason("search_limit", limit=4096)


def test_trial_budget_is_respected():
    mem = FakeMemory(1 * GiB, 10 * MiB, 16 * GiB, 8 * GiB)
    result = find_max_batch(mem, 16 * GiB, max_trials=5)
    assert len(result.trials) == 5 and not result.converged and result.reason


def test_auto_batches():
    assert auto_batches(1000) == [125, 250, 500, 1000]
    assert auto_batches(3) == [1, 3]
    assert auto_batches(0) == []


# ---------------------------------------------------------------- the safe batch

@pytest.mark.parametrize("largest, safe", [(1000, 896), (395, 352), (100, 88), (9, 8), (8, 7), (5, 4), (1, 1),
                                           (0, 0)])
def test_safe_batch_is_90_percent_rounded_down_to_a_multiple_of_8(largest, safe):
    assert safe_batch_size(largest) == safe
    assert safe <= largest * SAFE_FRACTION or largest <= 1


@pytest.mark.parametrize("name", CASES)
def test_safe_batch_is_below_the_largest_and_confirmed_by_a_repeat_run(name):
    base, per_sample, capacity, step = CASES[name]
    mem = FakeMemory(base, per_sample, capacity, step_bytes=step)
    largest = find_max_batch(mem, capacity).max_batch
    searched = len(mem.calls)
    safe = confirm_safe_batch(mem, largest)
    assert safe.confirmed and safe.batch_size == safe_batch_size(largest) < largest
    assert mem.calls[searched:] == [safe.batch_size]  # the repeat run, after the search
    assert safe.trials_json() == [{"batch_size": safe.batch_size, "status": "ok"}] and safe.reason is None


class Flaky(FakeMemory):
    """Memory that varies run to run: the first run of each listed size fails."""

    def __init__(self, *args, fail_once=(), **kw):
        super().__init__(*args, **kw)
        self.fail_once = set(fail_once)

    def __call__(self, b: int) -> Trial:
        if b in self.fail_once:
            self.fail_once.discard(b)
            self.calls.append(b)
            return Trial(b, "oom")
        return super().__call__(b)


def test_a_safe_batch_that_fails_its_repeat_run_steps_down_by_the_margin():
    mem = Flaky(1 * GiB, 20 * MiB, 24 * GiB, fail_once={safe_batch_size(1177)})
    safe = confirm_safe_batch(mem, 1177)
    first = safe_batch_size(1177)
    assert safe.confirmed and safe.batch_size == safe_batch_size(first) < first
    assert [t["status"] for t in safe.trials_json()] == ["oom", "ok"] and safe.reason == Reason("repeat_run_failed", batches=str(first))


def test_no_safe_batch_when_every_repeat_run_fails_or_nothing_fits():
    always = Flaky(1 * GiB, 20 * MiB, 24 * GiB, fail_once={1056, 944, 848, 760})
    safe = confirm_safe_batch(always, 1177, attempts=3)
    assert safe.batch_size is None and not safe.confirmed and len(safe.trials) == 3
    assert safe.reason is not None and safe.reason.key == "no_size_passed_repeat"
    nothing = confirm_safe_batch(FakeMemory(200 * GiB, GiB, 139 * GiB), 0)
    assert nothing.batch_size is None and nothing.trials == () and nothing.reason == Reason("no_batch_fits")
