"""Cost arithmetic, worked by hand in each test (docs/methods.md#cost)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest

from planner.engine.cost import (
    NoQuoteError,
    billed_hours,
    choose_quote,
    co2_kg,
    energy_kwh,
    estimate_cost,
    instances_needed,
    on_prem_usd_per_gpu_hour,
    run_hours,
    spot_preemption,
    stale_quote_warning,
    undated_rate_warning,
)
from planner.engine.estimates import ConvergenceEstimate, Source, StepEstimate
from planner.engine.option import OptionPlan
from planner.inputs.scenario import OnPrem, Pricing, SpotSettings, Workload
from tests.notes_support import english, texts, texts_of_triple  # noqa: F401

TODAY = dt.date(2026, 11, 29)


@dataclass(frozen=True)
class Quote:
    """Stands in for planner.inputs.profiles.PriceQuote (same attribute names)."""

    provider: str
    instance: str
    usd_per_gpu_hour: float
    tier: str = "on_demand"
    gpus_per_instance: int = 8
    billing_increment_s: float = 1.0
    region: str = "us-east-1"
    as_of: dt.date | None = dt.date(2026, 10, 1)
    source: str = "https://example.com/pricing"
    origin: str = "published"
    retrieved: dt.date | None = None


@dataclass(frozen=True)
class Gpu:
    """Stands in for planner.inputs.profiles.GpuProfile."""

    prices: tuple[Quote, ...]
    id: str = "h100-sxm-80gb"
    name: str = "NVIDIA H100 SXM 80GB"
    tdp_w: float | None = 400.0


NO_OVERHEADS = Workload(epochs=1, dataset_samples=1)


def cost(step_time_s, step_band_s, steps, steps_range, n_gpus, gpu, pricing, workload, **kw):
    """estimate_cost for an option of n_gpus × gpu whose step takes step_time_s (band) for `steps` (range)."""
    step = StepEstimate(step_time_s, step_time_s, 1.0, Source("measured"), step_band_s)
    conv = ConvergenceEstimate(steps, None, steps, Source("user"), steps_range=steps_range)
    return estimate_cost(OptionPlan(gpu, n_gpus, "bf16"), step, conv, pricing, workload, **kw)


# ---------------------------------------------------------------- formulas

def test_instances_round_up_and_say_so():
    assert texts_of_triple(instances_needed(6, 8)) == (1, 8, "rounded 6 GPUs up to 8: the quote sells 8-GPU instances")
    assert texts_of_triple(instances_needed(9, 8)) == (2, 16, "rounded 9 GPUs up to 16: the quote sells 8-GPU instances")
    assert instances_needed(16, 8) == (2, 16, None)
    assert instances_needed(3, 1) == (3, 3, None)


def test_billing_increment_rounds_up():
    assert billed_hours(2.1, 3600) == pytest.approx(3.0)  # per-hour billing
    assert billed_hours(2.0, 3600) == pytest.approx(2.0)  # no rounding on an exact multiple
    assert billed_hours(2.1, 60) == pytest.approx(2.1)  # 126 minutes
    assert billed_hours(2.101, 60) == pytest.approx(127 / 60)
    with pytest.raises(ValueError):
        billed_hours(1.0, 0)


def test_run_hours_overheads_multiply():
    # 10,000 steps x 0.36 s = 1 h; x 0.5 early stop = 0.5; x (1 + 0.05 + 0.05) = 0.55; x 1.1 failure = 0.605;
    # x 3 runs = 1.815 h.
    workload = Workload(epochs=1, dataset_samples=1, early_stop_fraction=0.5, eval_overhead=0.05,
                        checkpoint_overhead=0.05)
    assert run_hours(10_000, 0.36, workload, Pricing(failure_overhead=0.1, runs=3)) == pytest.approx(1.815)
    assert run_hours(10_000, 0.36, NO_OVERHEADS, Pricing()) == pytest.approx(1.0)


def test_spot_preemptions_and_lost_hours():
    # 10 h x 0.05 per instance-hour x 2 instances = 1 preemption, losing 30/2 + 10 = 25 min.
    spot = SpotSettings(preemptions_per_instance_hour=0.05, checkpoint_interval_min=30.0, restart_min=10.0)
    preemptions, lost = spot_preemption(10.0, 2, spot)
    assert preemptions == pytest.approx(1.0)
    assert lost == pytest.approx(25 / 60)


def test_on_prem_price_per_gpu_hour():
    # $30,000 / (4 y x 8,760 h x 0.6) = $1.42694; 500 W = 0.5 kW x PUE 1.4 x $0.12 = $0.084; total $1.51094.
    on_prem = OnPrem(purchase_usd_per_gpu=30000, lifetime_years=4, fleet_utilisation=0.6, usd_per_kwh=0.12, pue=1.4)
    assert on_prem_usd_per_gpu_hour(on_prem, 500) == pytest.approx(1.51094, abs=1e-5)
    assert on_prem_usd_per_gpu_hour(on_prem, 0) == pytest.approx(30000 / 21024)


def test_energy_and_co2():
    assert energy_kwh(8, 500, 10) == pytest.approx(40.0)  # 8 x 0.5 kW x 10 h
    assert energy_kwh(8, 500, 10, pue=1.4) == pytest.approx(56.0)
    assert co2_kg(40.0, 0.4) == pytest.approx(16.0)
    assert co2_kg(40.0, None) is None
    assert co2_kg(None, 0.4) is None


def test_stale_quote_warning():
    old = Quote("aws", "p5.48xlarge", 4.0, as_of=dt.date(2026, 1, 5))
    assert english(stale_quote_warning(old, TODAY)).startswith("price from 2026-01-05 is 328 days old")
    assert stale_quote_warning(Quote("aws", "p5", 4.0, as_of=dt.date(2026, 6, 2)), TODAY) is None  # 180 days
    assert stale_quote_warning(Quote("aws", "p5", 4.0, as_of=dt.date(2026, 6, 1)), TODAY) is not None  # 181
    assert "has no date" in english(stale_quote_warning(Quote("aws", "p5", 4.0, as_of=None), TODAY))
    assert stale_quote_warning(Quote("aws", "p5", 4.0, as_of=None, origin="user"), TODAY) is None
    # A catalog row read on a day but with no price date says when the catalog was read, and is still flagged.
    catalog = english(stale_quote_warning(Quote("aws", "p5", 4.0, as_of=None, retrieved=dt.date(2026, 11, 30)), TODAY))
    assert "read on 2026-11-30" in catalog and "no price date" in catalog


def test_undated_exchange_rate_warning():
    text = english(undated_rate_warning(Pricing(currency="MXN", exchange_rate=17.2)))
    assert "exchange rate 17.2 MXN per USD has no date" in text
    assert "pricing.exchange_rate_as_of" in text
    assert undated_rate_warning(Pricing(currency="MXN", exchange_rate=17.2,
                                        exchange_rate_as_of=dt.date(2026, 11, 1))) is None
    assert undated_rate_warning(Pricing()) is None


# ---------------------------------------------------------------- choose_quote

PRICES = (
    Quote("aws", "p5.48xlarge", 6.88),
    Quote("lambda", "gpu_8x_h100_sxm5", 2.99),
    Quote("lambda", "gpu_1x_h100_sxm5", 3.29, gpus_per_instance=1),
    Quote("aws", "p5.48xlarge", 2.50, tier="spot"),
)


def test_choose_cheapest_of_the_tier():
    assert choose_quote(PRICES, "on_demand").usd_per_gpu_hour == 2.99
    assert choose_quote(PRICES, "spot").provider == "aws"
    assert choose_quote(PRICES, "reserved_1y") is None


def test_choose_named_provider():
    assert choose_quote(PRICES, "on_demand", "AWS").usd_per_gpu_hour == 6.88
    assert choose_quote(PRICES, "on_demand", "gcp") is None


def test_user_override_wins_for_same_provider_instance_tier():
    dearer = Quote("lambda", "gpu_8x_h100_sxm5", 3.50, as_of=None, origin="user")
    assert choose_quote(PRICES[1:2], "on_demand", overrides=[dearer]) is dearer  # dearer, yet it wins
    # With the published 2.99 replaced, the cheapest on-demand is the 1-GPU lambda quote at 3.29.
    assert choose_quote(PRICES, "on_demand", overrides=[dearer]).usd_per_gpu_hour == 3.29
    extra = Quote("coreweave", "h100x8", 2.20, origin="user")
    assert choose_quote(PRICES, "on_demand", overrides=[extra]) is extra


def test_only_the_newest_quote_per_region_counts():
    old = Quote("aws", "p5.48xlarge", 2.00, region="us-east-1", as_of=dt.date(2025, 1, 1))
    new = Quote("aws", "p5.48xlarge", 4.00, region="us-east-1", as_of=dt.date(2026, 10, 1))
    west = Quote("aws", "p5.48xlarge", 3.50, region="us-west-2", as_of=dt.date(2026, 9, 1))
    future = Quote("aws", "p5.48xlarge", 1.00, region="us-east-1", as_of=dt.date(2027, 1, 1))
    assert choose_quote([old, new], "on_demand") is new  # the old, cheaper price is history
    assert choose_quote([old, new, west], "on_demand") is west  # another region is another offer
    assert choose_quote([old, new, future], "on_demand", today=TODAY) is new  # not yet published on TODAY


# ---------------------------------------------------------------- estimate_cost

def test_on_demand_rounding_billing_tax_and_currency():
    gpu = Gpu(prices=(Quote("aws", "p4d.24xlarge", 4.0, billing_increment_s=3600),))
    pricing = Pricing(currency="MXN", exchange_rate=17.0, exchange_rate_as_of=dt.date(2026, 11, 1), tax_rate=0.16,
                      grid_kg_co2_per_kwh=0.5)
    # 10,000 steps x 0.756 s = 2.1 h, billed 3 h; 6 GPUs billed as 8: 24 GPU-h x $4 = $96; x 1.16 tax = $111.36;
    # x 17 MXN/USD = 1,893.12 MXN.
    est = cost(0.756, (0.6, 0.9), 10_000, (8500, 11500), 6, gpu, pricing, NO_OVERHEADS, today=TODAY)
    assert est.hours == pytest.approx(2.1)
    assert est.n_gpus_billed == 8
    assert est.gpu_hours == pytest.approx(24.0)
    assert est.usd == pytest.approx(111.36)
    assert est.amount_in_currency == pytest.approx(1893.12)
    assert est.currency == "MXN"
    # Low: 8,500 x 0.6 s = 1.4167 h -> 2 h billed -> 8 x 2 x 4 x 1.16 = $74.24. High: 11,500 x 0.9 s = 2.875 h -> 3 h.
    assert est.hours_range == pytest.approx((8500 * 0.6 / 3600, 2.875))
    assert est.usd_range == pytest.approx((74.24, 111.36))
    assert est.amount_range_in_currency == pytest.approx((74.24 * 17, 111.36 * 17))
    # Energy: 6 GPUs x (400 W x 0.7 = 280 W) x 2.1 h = 3.528 kWh (cloud PUE 1.0); x 0.5 kg/kWh = 1.764 kg.
    assert est.energy_kwh == pytest.approx(3.528)
    assert est.co2_kg == pytest.approx(1.764)
    assert "rounded 6 GPUs up to 8: the quote sells 8-GPU instances" in texts(est.notes)
    assert "billed in 1-hour increments: 2.1 h -> 3 h" in texts(est.notes)
    assert any(n.startswith("energy assumes 70% of TDP (400 W -> 280 W per GPU)") for n in texts(est.notes))
    assert est.price.provider == "aws" and est.price.as_of == "2026-10-01" and est.price.origin == "published"


def test_spot_adds_lost_hours_and_preemptions():
    gpu = Gpu(prices=(Quote("aws", "p5.48xlarge", 2.0, tier="spot"),))
    pricing = Pricing(tier="spot", spot=SpotSettings(preemptions_per_instance_hour=0.05, checkpoint_interval_min=30,
                                                     restart_min=10))
    # 36,000 steps x 1 s = 10 h on 2 instances: 1 preemption, +25 min; 16 GPUs x 10.4167 h x $2 = $333.33.
    est = cost(1.0, (1.0, 1.0), 36_000, None, 16, gpu, pricing, NO_OVERHEADS, mean_power_w=500, today=TODAY)
    assert est.preemptions == pytest.approx(1.0)
    assert est.hours == pytest.approx(10 + 25 / 60)
    assert est.usd == pytest.approx(16 * (10 + 25 / 60) * 2.0)
    assert "spot: expect 1 preemptions, +0.4 h lost" in texts(est.notes)
    assert est.energy_kwh == pytest.approx(16 * 0.5 * (10 + 25 / 60))
    assert not any("TDP" in n for n in texts(est.notes))  # measured power given


def test_overheads_and_runs_multiply_in_the_estimate():
    gpu = Gpu(prices=(Quote("lambda", "gpu_1x_h100_sxm5", 3.0, gpus_per_instance=1),))
    workload = Workload(epochs=1, dataset_samples=1, early_stop_fraction=0.5, eval_overhead=0.05,
                        checkpoint_overhead=0.05)
    pricing = Pricing(runs=2, failure_overhead=0.1)
    # 7,200 steps x 1 s = 2 h; x 0.5 x 1.1 x 1.1 x 2 runs = 2.42 h; 4 GPUs x 2.42 h x $3 = $29.04.
    est = cost(1.0, (1.0, 1.0), 7200, None, 4, gpu, pricing, workload, today=TODAY)
    assert est.hours == pytest.approx(2.42)
    assert est.usd == pytest.approx(29.04)
    assert est.hours_range == pytest.approx((2.42, 2.42))


def test_pricing_billing_increment_overrides_the_quote():
    gpu = Gpu(prices=(Quote("lambda", "gpu_1x_h100_sxm5", 3.0, gpus_per_instance=1),))
    est = cost(0.756, (0.756, 0.756), 10_000, None, 1, gpu, Pricing(billing_increment_min=60),
                        NO_OVERHEADS, today=TODAY)
    assert est.usd == pytest.approx(9.0)  # 2.1 h billed as 3 h at $3


def test_on_prem_price_and_facility_energy():
    on_prem = OnPrem(purchase_usd_per_gpu=30000, lifetime_years=4, fleet_utilisation=0.6, usd_per_kwh=0.12, pue=1.4)
    pricing = Pricing(tier="on_prem", on_prem=on_prem)
    # 3 GPUs x 1 h x $1.51094 = $4.53282; energy 3 x 0.5 kW x 1 h x PUE 1.4 = 2.1 kWh.
    est = cost(0.36, (0.36, 0.36), 10_000, None, 3, Gpu(prices=()), pricing, NO_OVERHEADS,
                        mean_power_w=500, today=TODAY)
    assert est.price.provider == "on-prem" and est.price.origin == "on_prem" and est.price.tier == "on_prem"
    assert est.price.usd_per_gpu_hour == pytest.approx(1.51094, abs=1e-5)
    assert est.usd == pytest.approx(3 * 1.51094, abs=1e-4)
    assert est.n_gpus_billed == 3
    assert est.energy_kwh == pytest.approx(2.1)
    assert not any("days old" in n or "no date" in n for n in texts(est.notes))


def test_stale_quote_and_undated_rate_reach_the_notes():
    gpu = Gpu(prices=(Quote("aws", "p5.48xlarge", 4.0, as_of=dt.date(2026, 1, 5)),))
    pricing = Pricing(currency="EUR", exchange_rate=0.92)
    est = cost(1.0, (1.0, 1.0), 3600, None, 8, gpu, pricing, NO_OVERHEADS, today=TODAY)
    assert any(n.startswith("price from 2026-01-05 is 328 days old") for n in texts(est.notes))
    assert any("exchange rate 0.92 EUR per USD has no date" in n for n in texts(est.notes))
    assert est.amount_in_currency == pytest.approx(8 * 4.0 * 0.92)


def test_user_override_is_the_price_billed():
    gpu = Gpu(prices=(Quote("aws", "p5.48xlarge", 6.88),))
    override = Quote("aws", "p5.48xlarge", 5.00, as_of=None, origin="user")
    est = cost(1.0, (1.0, 1.0), 3600, None, 8, gpu, Pricing(), NO_OVERHEADS, overrides=[override],
                        today=TODAY)
    assert est.price.origin == "user" and est.price.as_of is None
    assert est.usd == pytest.approx(40.0)


def test_no_quote_for_the_tier_is_a_clear_error():
    gpu = Gpu(prices=(Quote("aws", "p5.48xlarge", 6.88),))
    with pytest.raises(NoQuoteError) as err:
        cost(1.0, (1.0, 1.0), 3600, None, 8, gpu, Pricing(tier="reserved_3y"), NO_OVERHEADS, today=TODAY)
    message = english(err.value.note)
    assert "no reserved_3y price for NVIDIA H100 SXM 80GB (h100-sxm-80gb)" in message
    assert "it has quotes for: on_demand" in message
    assert "price override" in message
    assert isinstance(err.value, ValueError)
