"""Prices that disagree (issue 35 c): a catalog "spot" price equal to the same row's on-demand price is not a spot
discount (five shipped quotes were: RunPod A100 80 GB in CA and US, Azure NC H100 v5), so no spot quote is kept from
it and the import says so; the row's on-demand quote stays. A dated quote and an undated catalog price of one
provider, GPU, tier and GPUs per instance that differ by over 10 % are both named in the plan, with the rule that
chose between them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from planner.engine.plan import build_plan
from planner.inputs import price_catalog as pc
from planner.inputs.folders import load_inputs
from planner.inputs.profiles import prefer_dated, price_disagreements
from planner.inputs.quotes import PriceQuote
from planner.inputs.scenario import parse_scenario
from planner.present import fmt
from planner.present.notes import render_note

ROOT = Path(__file__).resolve().parents[1]
TODAY = dt.date(2026, 12, 8)
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Region,SpotPrice,Price,AvailabilityZone\n"


def _import(tmp_path: Path, rows: str) -> pc.ImportResult:
    path = tmp_path / "runpod" / "vms.csv"
    path.parent.mkdir()
    path.write_text(HEADER + rows, encoding="utf-8")
    return pc.import_catalogs([path], pc.load_aliases(pc.ALIASES_PATH), source="test catalog", today=TODAY)


def test_a_spot_price_equal_to_on_demand_keeps_only_the_on_demand_quote(tmp_path):
    result = _import(tmp_path, "1x_A100-80GB_SECURE,A100-80GB,1.0,8.0,117.0,CA,1.39,1.39,CA-MTL-1\n"
                               "1x_RTX4090_SECURE,RTX4090,1.0,8.0,41.0,CA,0.35,0.69,CA-MTL-1\n")
    a100 = result.quotes["a100-pcie-80gb"]
    assert [(q.tier, q.usd_per_gpu_hour) for q in a100] == [("on_demand", 1.39)]
    assert {q.tier for q in result.quotes["rtx4090-24gb"]} == {"on_demand", "spot"}  # a real discount is kept
    assert len(result.spot_as_on_demand) == 1 and "1x_A100-80GB_SECURE" in result.spot_as_on_demand[0]
    assert result.mapped + sum(result.unmapped.values()) == result.gpu_rows  # the row is still mapped
    said = "\n".join(pc.summary_lines(result))
    assert pc.SPOT_AS_ON_DEMAND in said and "1x_A100-80GB_SECURE" in said


def test_the_shipped_catalog_has_no_spot_quote_equal_to_its_on_demand():
    snapshot = pc.load_snapshot(ROOT / "gpu_profiles" / "catalog" / "skypilot.yaml")
    for profile, quotes in snapshot.quotes.items():
        on_demand = {(q.provider, q.instance, q.region): q.usd_per_gpu_hour for q in quotes if q.tier == "on_demand"}
        for q in quotes:
            if q.tier == "spot":
                assert on_demand.get((q.provider, q.instance, q.region)) != q.usd_per_gpu_hour, (profile, q)
    text = (ROOT / "gpu_profiles" / "catalog" / "skypilot.yaml").read_text(encoding="utf-8")
    assert pc.SPOT_AS_ON_DEMAND in text  # the snapshot's summary counts what was dropped


# ---------------------------------------------------------------- a dated quote and an undated catalog price disagree

def _q(provider: str, instance: str, usd: float, *, as_of: dt.date | None = None, retrieved: dt.date | None = None,
       gpus: int = 1, tier: str = "on_demand") -> PriceQuote:
    return PriceQuote(provider=provider, instance=instance, gpus_per_instance=gpus, usd_per_gpu_hour=usd, tier=tier,
                      billing_increment_s=1, region=None, as_of=as_of, source="test", retrieved=retrieved)


RATE_CARD = _q("cloud", "HGX H200", 4.50, as_of=dt.date(2026, 9, 25))


def test_quotes_of_one_provider_tier_and_count_are_matched_whatever_their_instance_names():
    read_later = _q("cloud", "gpu-h200_1gpu", 3.50, retrieved=dt.date(2026, 12, 2))
    within = _q("cloud", "gpu-h200_1gpu-b", 4.06, retrieved=dt.date(2026, 12, 2))  # 9.8 % apart: tolerated
    eight = _q("cloud", "gpu-h200_8gpu", 3.50, retrieved=dt.date(2026, 12, 2), gpus=8)  # another count
    other = _q("elsewhere", "h200", 3.50, retrieved=dt.date(2026, 12, 2))
    (d,) = price_disagreements([RATE_CARD, read_later, within, eight, other])
    assert (d.dated, d.undated) == (RATE_CARD, read_later) and round(100 * d.fraction) == -22
    assert not d.dated_wins  # the catalog was read after the rate card's date: it may be a price cut
    assert prefer_dated([RATE_CARD, read_later]) == [RATE_CARD, read_later]
    read_before = _q("cloud", "gpu-h200_1gpu", 3.50, retrieved=dt.date(2026, 9, 1))
    assert prefer_dated([RATE_CARD, read_before]) == [RATE_CARD]  # a dated price beats an older undated read


def test_a_dated_quote_older_than_the_freshness_limit_is_history_not_a_rival():
    old = _q("cloud", "g5.24xlarge", 2.04, as_of=dt.date(2025, 1, 1))
    assert price_disagreements([old, _q("cloud", "g5.12xlarge", 1.42, retrieved=dt.date(2026, 12, 2))]) == []


@pytest.mark.parametrize(("lang", "words"), [("en", "disagree"), ("es", "no coinciden")])
def test_the_plan_names_both_nebius_h200_prices_with_their_dates(lang, words):
    inputs = load_inputs(include_user_data=False)
    scenario = parse_scenario({
        "schema": "trainplan.scenario/1", "name": "h200 at nebius", "locale": lang,
        "model": {"family": "cnn", "name": "resnet50", "params": 25.6e6},
        "training": {"precisions": ["bf16"], "global_batch": 256},
        "workload": {"dataset_samples": 1281167, "epochs": 1},
        "hardware": {"gpus": ["h200-sxm-141gb"], "gpu_counts": [1]},
        "pricing": {"provider": "nebius"}})
    (o,) = build_plan(scenario, inputs, today=TODAY).options
    notes = [n for n in o.cost.notes if n.key.startswith("price_disagrees")]
    assert notes, [n.key for n in o.cost.notes]
    said = " ".join(render_note(n, lang) for n in notes)
    for text in (fmt.money(4.5, "USD", lang), fmt.money(3.5, "USD", lang), "2026-09-25", "2026-12-02", "HGX H200",
                 "gpu-h200-sxm_1gpu-16vcpu-200gb", words):
        assert text in said, (text, said)
