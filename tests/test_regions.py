"""Regions (issue 17): which group a cloud region is in, the scenario's region filter, and what the plan bills."""

from __future__ import annotations

import datetime as dt

import pytest

from planner.engine.cost import NoQuoteError, choose_quote
from planner.inputs.errors import InputError
from planner.inputs.profiles import PriceQuote
from planner.inputs.regions import in_regions, region_group
from planner.inputs.scenario import Pricing, dump_scenario_yaml, load_scenario_text
from tests.notes_support import english
from tests.test_cost import NO_OVERHEADS, TODAY, Gpu, cost


@pytest.mark.parametrize("region,group", [
    ("sa-east-1", "latam"), ("mx-central-1", "latam"),                                   # AWS
    ("southamerica-east1", "latam"), ("southamerica-west1", "latam"), ("northamerica-south1", "latam"),  # GCP
    ("brazilsouth", "latam"), ("mexicocentral", "latam"), ("chilecentral", "latam"),    # Azure
    ("sa-santiago-1", "latam"), ("mx-queretaro-1", "latam"), ("sa-bogota-1", "latam"),  # Oracle
    ("us-east-1", "us"), ("eastus2", "us"), ("southcentralus", "us"), ("US-1", "us"), ("US", "us"),
    ("eu-north1", "eu"), ("europe-west4", "eu"), ("westeurope", "eu"), ("FIN-02", "eu"), ("NORWAY-1", "eu"),
    ("us-gov-west-1", None), ("ca-central-1", None), ("CANADA-1", None), ("ap-northeast-1", None),
    ("northamerica-northeast1", None), (None, None), ("", None),
])
def test_region_groups(region, group):
    assert region_group(region) == group


def test_filter_names_beat_the_group_and_any_keeps_region_less_quotes():
    assert in_regions(None) and in_regions("ap-south-1")
    assert not in_regions(None, group="latam")
    assert in_regions("SA-EAST-1", group="us", regions=["sa-east-1"])  # names replace the group
    assert not in_regions("us-east-1", regions=["sa-east-1"])
    with pytest.raises(ValueError):
        in_regions("us-east-1", group="mars")


def _q(usd: float, region: str | None, *, provider: str = "aws", instance: str = "g5.xlarge", gpus: int = 1,
       origin: str = "published") -> PriceQuote:
    return PriceQuote(provider, instance, gpus, usd, "on_demand", 1, region, dt.date(2026, 11, 1), "test", origin)


QUOTES = [_q(1.01, "us-east-1"), _q(1.52, "sa-east-1"), _q(0.9, None, provider="runpod", instance="A10G"),
          _q(1.30, "eu-west1", provider="nebius", instance="a10g")]


def test_region_group_picks_the_cheapest_quote_inside_it():
    assert choose_quote(QUOTES, "on_demand").usd_per_gpu_hour == 0.9  # any: the region-less one is cheapest
    assert choose_quote(QUOTES, "on_demand", region_group="latam").region == "sa-east-1"
    assert choose_quote(QUOTES, "on_demand", region_group="us").region == "us-east-1"
    assert choose_quote(QUOTES, "on_demand", region_group="eu").provider == "nebius"
    assert choose_quote(QUOTES, "on_demand", regions=["eu-west1", "sa-east-1"]).region == "eu-west1"
    assert choose_quote(QUOTES, "on_demand", regions=["ap-south-1"]) is None


def test_your_own_price_counts_everywhere_unless_it_names_a_region_outside_the_filter():
    mine = _q(2.0, None, provider="acme", instance="box", origin="user")
    assert choose_quote(QUOTES[:1], "on_demand", overrides=[mine], region_group="latam") is mine
    in_virginia = _q(2.0, "us-east-1", provider="acme", instance="box", origin="user")
    assert choose_quote(QUOTES, "on_demand", overrides=[in_virginia], region_group="latam").region == "sa-east-1"
    assert choose_quote(QUOTES, "on_demand", overrides=[in_virginia], region_group="us").usd_per_gpu_hour == 1.01


def test_plan_bills_the_region_and_says_so():
    gpu = Gpu(prices=tuple(QUOTES))
    c = cost(1.0, (1.0, 1.0), 3600, None, 1, gpu, Pricing(region_group="latam"), NO_OVERHEADS, today=TODAY)
    assert c.price is not None and c.price.region == "sa-east-1" and c.usd == pytest.approx(1.52)


def test_no_quote_in_the_regions_names_the_nearest_offer():
    gpu = Gpu(prices=(QUOTES[0],))
    with pytest.raises(NoQuoteError) as err:
        cost(1.0, (1.0, 1.0), 3600, None, 1, gpu, Pricing(region_group="latam"), NO_OVERHEADS, today=TODAY)
    text = english(err.value.note)
    assert "in the regions asked for (latam)" in text and "aws in us-east-1 at $1.01" in text
    unplaced = Gpu(prices=(QUOTES[2],))
    with pytest.raises(NoQuoteError) as err:
        cost(1.0, (1.0, 1.0), 3600, None, 1, unplaced, Pricing(region_group="latam"), NO_OVERHEADS, today=TODAY)
    assert "runpod in a region it does not name at $0.9" in english(err.value.note)


SCENARIO = """schema: trainplan.scenario/1
model: {{name: resnet50}}
training: {{global_batch: 256, precisions: [bf16]}}
workload: {{epochs: 1, dataset_samples: 1000}}
pricing: {pricing}
"""


def test_scenario_reads_and_writes_regions():
    s = load_scenario_text(SCENARIO.format(pricing="{region_group: latam}"))
    assert s.pricing.region_group == "latam" and s.pricing.regions == ()
    s2 = load_scenario_text(SCENARIO.format(pricing="{regions: [sa-east-1, southamerica-east1]}"))
    assert s2.pricing.regions == ("sa-east-1", "southamerica-east1")
    assert load_scenario_text(dump_scenario_yaml(s2)) == s2
    assert "regions" not in dump_scenario_yaml(s)  # empty: left out, the group decides


@pytest.mark.parametrize("pricing,field,expected", [
    ("{region_group: asia}", "pricing.region_group", "one of any, latam, us, eu"),
    ("{region_group: latam, regions: [sa-east-1]}", "pricing.regions", "either regions or region_group"),
    ("{regions: sa-east-1}", "pricing.regions", "a list of strings"),
    ("{regions: ['']}", "pricing.regions[0]", "a non-empty string"),
    ("{regions: [" + ", ".join(["r"] * 51) + "]}", "pricing.regions", "at most 50 region names"),
])
def test_bad_region_settings_name_the_field(pricing, field, expected):
    with pytest.raises(InputError) as err:
        load_scenario_text(SCENARIO.format(pricing=pricing))
    assert err.value.field == field and expected in str(err.value)
