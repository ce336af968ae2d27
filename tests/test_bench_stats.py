"""Step-time statistics: median, p10, p90 (linear interpolation, numpy's default), mean, sample std, n."""

from __future__ import annotations

import statistics

import pytest

from bench.stats import noise_warning, percentile, step_time_block, summarize


def test_summary_of_known_values():
    s = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert s == {"median": 3.0, "p10": 1.4, "p90": 4.6, "mean": 3.0, "std": pytest.approx(statistics.stdev(
        [1, 2, 3, 4, 5])), "n": 5}


def test_order_does_not_matter_and_even_count_median_interpolates():
    assert summarize([4.0, 1.0, 3.0, 2.0])["median"] == 2.5
    assert percentile([10.0, 0.0], 25) == 2.5


def test_single_value():
    assert summarize([0.25]) == {"median": 0.25, "p10": 0.25, "p90": 0.25, "mean": 0.25, "std": 0.0, "n": 1}


@pytest.mark.parametrize("bad", [[], None])
def test_empty_is_an_error(bad):
    with pytest.raises((ValueError, TypeError)):
        summarize(bad)


def test_percentile_range_checked():
    with pytest.raises(ValueError):
        percentile([1.0], 101)


@pytest.mark.parametrize("times, ratio, noisy", [
    ([0.9, 0.94, 1.0, 1.06, 1.1], 0.12, True),    # p25 0.94, p75 1.06: IQR/median 0.12
    ([0.9, 0.975, 1.0, 1.025, 1.1], 0.05, False),
    ([0.25], 0.0, False),
])
def test_step_time_block_keeps_the_raw_times_and_flags_noise(times, ratio, noisy):
    block, flag = step_time_block(times)
    assert block["raw"] == times and block["n"] == len(times) and block["median"] == percentile(times, 50)
    assert block["iqr_over_median"] == pytest.approx(ratio) and flag is noisy
    if noisy:
        warning = noise_warning(block, precision="bf16", batch=8)
        assert (warning.key, warning.params) == ("noisy_steps", {"precision": "bf16", "batch": 8, "iqr_pct": 12.0,
                                                                 "limit_pct": 10, "n": len(times)})
