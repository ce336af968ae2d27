"""Prices that disagree (issue 35 c): a catalog "spot" price equal to the same row's on-demand price is not a spot
discount (five shipped quotes were: RunPod A100 80 GB in CA and US, Azure NC H100 v5), so no spot quote is kept from
it and the import says so; the row's on-demand quote stays."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from planner.inputs import price_catalog as pc

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
