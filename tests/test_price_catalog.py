"""Tests for planner.inputs.price_catalog and `python -m planner prices import`: recorded SkyPilot excerpts only."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from planner.cli import run
from planner.inputs import price_catalog as pc
from planner.inputs.errors import InputError
from planner.inputs.profiles import (
    DEFAULT_PROFILES_DIR,
    FRESH,
    STALE,
    UNDATED,
    PriceQuote,
    current_quotes,
    load_profiles,
    merge_catalog_quotes,
    newer_quote,
    quote_freshness,
    rate_is_stale,
)
from planner.vocab import EXCHANGE_RATE_MAX_AGE_DAYS, QUOTE_MAX_AGE_DAYS

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "catalog"
TODAY = dt.date(2026, 12, 2)


@pytest.fixture(scope="module")
def imported(aliases) -> pc.ImportResult:
    return pc.import_catalogs([FIXTURES], aliases, today=TODAY)


def _quotes(result: pc.ImportResult, profile: str, **match) -> list[PriceQuote]:
    return [q for q in result.quotes.get(profile, []) if all(getattr(q, k) == v for k, v in match.items())]


# ---------------------------------------------------------------- mapping a recorded excerpt

def test_instance_type_tells_sxm_pcie_40_80(imported):
    # AWS p4d / p4de, Azure NC A100 v4 / ND A100 v4 and Lambda's names: the catalog's memory column is never read.
    assert _quotes(imported, "a100-sxm-40gb", provider="aws", instance="p4d.24xlarge")
    assert _quotes(imported, "a100-sxm-80gb", provider="aws", instance="p4de.24xlarge")
    assert _quotes(imported, "a100-pcie-80gb", provider="azure", instance="Standard_NC24ads_A100_v4")
    assert _quotes(imported, "a100-sxm-40gb", provider="azure", instance="Standard_ND96asr_v4")
    assert _quotes(imported, "a100-sxm-80gb", provider="lambda", instance="gpu_8x_a100_80gb_sxm4")
    assert _quotes(imported, "h100-pcie-80gb", provider="lambda", instance="gpu_1x_h100_pcie")
    assert _quotes(imported, "h100-sxm-80gb", provider="lambda", instance="gpu_2x_h100_sxm5")
    assert not _quotes(imported, "a100-sxm-40gb", provider="lambda")  # gpu_8x_a100 says neither SXM nor PCIe


def test_per_gpu_prices_for_1_2_4_8_gpu_instances(imported):
    sizes = {q.gpus_per_instance for quotes in imported.quotes.values() for q in quotes}
    assert {1, 2, 4, 8} <= sizes
    (p4d,) = _quotes(imported, "a100-sxm-40gb", instance="p4d.24xlarge", region="us-east-1", tier="on_demand")
    assert p4d.gpus_per_instance == 8 and p4d.usd_per_gpu_hour == pytest.approx(21.957642 / 8)
    (g5_4,) = _quotes(imported, "a10g-24gb", instance="g5.12xlarge", tier="on_demand")
    assert g5_4.usd_per_gpu_hour == pytest.approx(5.672 / 4)


def test_spot_is_the_cheapest_zone_of_each_region_and_regions_are_kept(imported):
    spot = _quotes(imported, "a100-sxm-40gb", instance="p4d.24xlarge", tier="spot")
    assert {q.region for q in spot} == {"us-east-1", "eu-west-1"}
    (east,) = [q for q in spot if q.region == "us-east-1"]
    assert east.usd_per_gpu_hour == pytest.approx(2.4655 / 8, abs=1e-6) and "(use1-az1)" in east.source
    (g5,) = _quotes(imported, "a10g-24gb", instance="g5.xlarge", tier="spot")
    assert g5.usd_per_gpu_hour == pytest.approx(0.4246)  # az2 beats az1
    assert not _quotes(imported, "h100-sxm-80gb", instance="p5.4xlarge", tier="spot")  # empty SpotPrice: no quote


def test_quotes_carry_provenance_and_no_invented_date(imported):
    (q,) = _quotes(imported, "a100-pcie-80gb", region="eastus", tier="on_demand")
    assert q.source == ("skypilot-org/skypilot-catalog@098741e70562f65d7af1cceb81e33b284f742604:"
                        "catalogs/v6/azure/vms.csv row Standard_NC24ads_A100_v4 eastus")
    assert q.as_of is None and q.retrieved == TODAY and q.from_catalog
    (lam,) = _quotes(imported, "h100-pcie-80gb")
    assert lam.source.endswith("lambda/vms.csv row gpu_1x_h100_pcie us-east-1")  # no header: the file path
    assert lam.billing_increment_s == 60 and q.billing_increment_s == 1  # the alias table's billing


def test_unmapped_and_broken_rows_are_counted_by_reason(imported):
    u = imported.unmapped
    assert u[pc.BAD_ROW] == 1 and u[pc.NO_RULE] == 1 and u[pc.COUNT_CONFLICT] == 1 and u[pc.NO_PRICE] == 1
    assert u[pc.EXCLUDED] == 2  # g5g T4g, lambda gpu_8x_a100
    (bad,) = imported.examples[pc.BAD_ROW]
    assert "aws/vms.csv line 16" in bad and "Price: got '-3.06'" in bad and "> 0" in bad
    (unmapped,) = imported.examples[pc.NO_RULE]
    assert "g4ad.xlarge Radeon Pro V520" in unmapped
    (conflict,) = imported.examples[pc.COUNT_CONFLICT]
    assert "AcceleratorCount 12, the instance has 8" in conflict
    # the TPU and the CPU rows are not GPU rows; every GPU row is mapped or has a reason
    assert imported.rows_read == 23 and imported.gpu_rows == 20
    assert imported.mapped + sum(u.values()) == imported.gpu_rows


def test_summary_lists_reasons_and_quotes_by_provider_tier_region(imported):
    text = "\n".join(pc.summary_lines(imported))
    assert "20 GPU rows" in text and pc.NO_RULE in text and "Radeon Pro V520" in text
    assert "aws         spot" in text and "region(s): eu-west-1, us-east-1" in text


# ---------------------------------------------------------------- freshness and no double count

def _q(provider="aws", instance="p4d.24xlarge", region="us-east-1", tier="on_demand", price=3.0, as_of=None,
       origin="published", retrieved=None) -> PriceQuote:
    return PriceQuote(provider, instance, 8, price, tier, 1, region, as_of, "test", origin, retrieved)


def test_freshness_rule_thresholds_live_in_the_vocabulary():
    assert (QUOTE_MAX_AGE_DAYS, EXCHANGE_RATE_MAX_AGE_DAYS) == (180, 30)
    assert quote_freshness(_q(as_of=TODAY - dt.timedelta(days=180)), TODAY) == FRESH
    assert quote_freshness(_q(as_of=TODAY - dt.timedelta(days=181)), TODAY) == STALE
    assert quote_freshness(_q(as_of=None, retrieved=TODAY), TODAY) == UNDATED  # a catalog row: date unknown
    assert quote_freshness(_q(as_of=None, origin="user"), TODAY) == FRESH
    assert not rate_is_stale(TODAY - dt.timedelta(days=30), TODAY)
    assert rate_is_stale(TODAY - dt.timedelta(days=31), TODAY) and rate_is_stale(None, TODAY)


def test_newest_quote_per_provider_instance_region_wins():
    old, new = _q(as_of=dt.date(2025, 1, 1), price=2.0), _q(as_of=dt.date(2026, 11, 1), price=4.0)
    undated = _q(as_of=None, price=1.0, retrieved=TODAY)
    assert newer_quote(new, old) and not newer_quote(old, new) and newer_quote(old, undated)
    assert current_quotes([old, new, undated]) == [new]  # an old, cheaper price is history, not an offer
    other_region = _q(region="eu-west-1", as_of=None, retrieved=TODAY)
    assert len(current_quotes([new, other_region])) == 2


def test_a_catalog_quote_replaces_a_hand_collected_one_when_newer_or_when_that_one_is_stale():
    hand = _q(as_of=dt.date(2026, 11, 9), price=2.7447)
    undated_catalog = _q(price=2.744705, retrieved=TODAY)
    assert merge_catalog_quotes([hand], [undated_catalog]) == (hand,)  # same offer, a current hand price: once
    # A hand price that was stale (or undated) when the catalog was read is history: the catalog's replaces it.
    old_hand, undated_hand = _q(as_of=dt.date(2022, 8, 1), price=0.16), _q(as_of=None, price=0.8)
    assert merge_catalog_quotes([old_hand], [undated_catalog]) == (undated_catalog,)
    assert merge_catalog_quotes([undated_hand], [undated_catalog]) == (undated_catalog,)
    # A hand price that names no region is the same offer as the catalog's in any region (never billed twice).
    unplaced = _q(region=None, as_of=dt.date(2025, 3, 17))
    regions = [_q(region=r, retrieved=TODAY) for r in ("sa-saopaulo-1", "us-ashburn-1")]
    assert merge_catalog_quotes([unplaced], regions) == tuple(regions)
    # A current one stays, and takes the catalog's regions (the catalog says where it is sold): once per region.
    fresh_unplaced = _q(region=None, as_of=dt.date(2026, 11, 30), price=2.0)
    merged = merge_catalog_quotes([fresh_unplaced], regions)
    assert [(q.region, q.usd_per_gpu_hour, q.as_of) for q in merged] == [
        ("sa-saopaulo-1", 2.0, dt.date(2026, 11, 30)), ("us-ashburn-1", 2.0, dt.date(2026, 11, 30))]
    assert all("where the catalog sells it" in q.source for q in merged)
    newer_catalog = _q(price=2.5, as_of=dt.date(2026, 12, 1), retrieved=TODAY)
    assert merge_catalog_quotes([hand], [newer_catalog]) == (newer_catalog,)
    spot = _q(tier="spot", retrieved=TODAY)
    other_region = _q(region="eu-west-1", retrieved=TODAY)
    assert set(merge_catalog_quotes([hand], [spot, other_region])) == {hand, spot, other_region}
    twice = merge_catalog_quotes([], [undated_catalog, undated_catalog])
    assert twice == (undated_catalog,)


# ---------------------------------------------------------------- the snapshot and the profile loader

def _profiles_with_snapshot(tmp_path: Path, snapshot_text: str) -> Path:
    folder = tmp_path / "profiles"
    (folder / "catalog").mkdir(parents=True)
    for pid in ("a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-80gb", "a10g-24gb", "h100-sxm-80gb", "h100-pcie-80gb",
                "h200-sxm-141gb"):
        shutil.copy(DEFAULT_PROFILES_DIR / f"{pid}.yaml", folder / f"{pid}.yaml")
    (folder / "catalog" / "skypilot.yaml").write_text(snapshot_text, encoding="utf-8")
    return folder


def test_loader_merges_snapshot_quotes_into_profiles(tmp_path, imported):
    folder = _profiles_with_snapshot(tmp_path, pc.render_snapshot(imported))
    profiles, problems = load_profiles(folder)
    assert problems == []
    pcie = profiles["a100-pcie-80gb"]
    catalog = [q for q in pcie.prices if q.from_catalog]
    assert {q.region for q in catalog} == {"eastus", "centralus"}
    assert all(q.as_of is None and q.retrieved == TODAY for q in catalog)
    hand = [q for q in pcie.prices if not q.from_catalog]
    assert hand == list(load_profiles(DEFAULT_PROFILES_DIR)[0]["a100-pcie-80gb"].prices)[: len(hand)]
    snapshot = pc.load_snapshot(folder / "catalog" / "skypilot.yaml")
    assert snapshot.as_of is None and snapshot.retrieved == TODAY


def test_a_broken_snapshot_is_reported_and_profiles_still_load(tmp_path, imported):
    text = pc.render_snapshot(imported).replace("usd_per_gpu_hour: 3.673,", "usd_per_gpu_hour: -1,", 1)
    folder = _profiles_with_snapshot(tmp_path, text)
    profiles, problems = load_profiles(folder)
    assert len(profiles) == 7 and not any(q.from_catalog for p in profiles.values() for q in p.prices)
    (problem,) = problems
    assert "catalog/skypilot.yaml: quotes.a100-pcie-80gb[" in problem and "usd_per_gpu_hour" in problem


def test_a_snapshot_naming_an_unknown_profile_is_reported(tmp_path):
    text = pc.render_snapshot(pc.ImportResult()).replace("quotes: {}", "quotes:\n  no-such-gpu: []")
    folder = _profiles_with_snapshot(tmp_path, text)
    _, problems = load_profiles(folder)
    assert len(problems) == 1 and "quotes.no-such-gpu" in problems[0]


def test_alias_rules_name_existing_profiles_and_say_why_when_excluding(aliases):
    assert all(r.profile is not None or r.why for r in aliases.rules)
    with pytest.raises(InputError, match=r"rules\[1\]\.profile: got .a10g-24gb."):
        pc.load_aliases(pc.ALIASES_PATH, known_profiles=["t4-16gb"])


# ---------------------------------------------------------------- the command

def test_import_writes_the_snapshot_and_check_accepts_it(tmp_path, capsys):
    out = tmp_path / "snap.yaml"
    assert run(["prices", "import", str(FIXTURES), "--out", str(out)]) == 0
    assert pc.load_snapshot(out).quotes["a100-sxm-80gb"]
    assert run(["prices", "import", str(FIXTURES), "--check", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "GPU rows" in err and "matches its raw files" in err


def test_check_on_a_stale_snapshot_exits_2_naming_the_file(tmp_path, capsys):
    out = tmp_path / "snap.yaml"
    assert run(["prices", "import", str(FIXTURES), "--out", str(out)]) == 0
    out.write_text(out.read_text(encoding="utf-8").replace("21.957642", "20.0", 1).replace("2.744705", "2.5"),
                   encoding="utf-8")
    assert run(["prices", "import", str(FIXTURES), "--check", "--out", str(out)]) == 2
    assert f"error: {out}: got 'a snapshot that differs" in capsys.readouterr().err


def test_missing_columns_are_named_with_file_and_line(tmp_path, capsys):
    bad = tmp_path / "vms.csv"
    bad.write_text("# source: x\nInstanceType,AcceleratorName,Region\np4d.24xlarge,A100,us-east-1\n", encoding="utf-8")
    assert run(["prices", "import", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: line 2" in err and "AcceleratorCount, Price" in err


def test_a_non_utf8_file_is_refused_with_its_name(tmp_path, capsys):
    bad = tmp_path / "vms.csv"
    bad.write_bytes(b"InstanceType,AcceleratorName,AcceleratorCount,Price,Region\np4d,A100,8,3.0,S\xe3o Paulo\n")
    assert run(["prices", "import", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "not UTF-8 (byte 75)" in err


def test_a_missing_path_is_bad_input(tmp_path, capsys):
    assert run(["prices", "import", str(tmp_path / "absent")]) == 2
    assert "an existing vms.csv file or a folder of them" in capsys.readouterr().err


def test_check_needs_the_snapshot_to_compare(capsys):
    assert run(["prices", "import", str(FIXTURES), "--check"]) == 2
    assert "--out" in capsys.readouterr().err


# ---------------------------------------------------------------- Google Cloud: host row + accelerator row

def test_gcp_prices_a_gpu_machine_as_host_plus_its_accelerator_row(aliases):
    result = pc.import_catalogs([FIXTURES.parent / "catalog_gcp"], aliases, today=TODAY)
    (a100,) = _quotes(result, "a100-sxm-40gb", tier="on_demand")
    assert a100.instance == "a2-highgpu-1g" and a100.usd_per_gpu_hour == pytest.approx(0.73948 + 2.93391)
    assert "host line 6 + A100 x1 line 11" in a100.source
    (a100_spot,) = _quotes(result, "a100-sxm-40gb", tier="spot")
    assert a100_spot.usd_per_gpu_hour == pytest.approx(0.36975 + 1.4341)
    # g2-standard-8 in zone b has no L4 row there: zone a's offer stands alone, no price is borrowed across zones.
    (l4,) = _quotes(result, "l4-24gb", tier="on_demand")
    assert l4.usd_per_gpu_hour == pytest.approx(0.29358 + 0.56004) and "us-central1-a" in l4.source
    # One N1 host, three T4 counts: the host's price is spread over the GPUs it carries.
    t4 = {q.gpus_per_instance: q.usd_per_gpu_hour for q in _quotes(result, "t4-16gb", tier="on_demand")}
    assert t4 == pytest.approx({1: 0.75114 + 0.48, 2: (0.75114 + 0.96) / 2, 4: (0.75114 + 1.92) / 4})
    assert {q.region for q in _quotes(result, "t4-16gb")} == {"southamerica-east1"}
    # the A100 x16 row has no host here: it stays, counted as accelerator-only, never billed
    assert result.unmapped[pc.ACCELERATOR_ONLY] == 1
    assert result.mapped + sum(result.unmapped.values()) == result.gpu_rows


def test_only_the_newest_refresh_of_a_provider_is_read(tmp_path, imported):
    folder = _profiles_with_snapshot(tmp_path, pc.render_snapshot(pc.ImportResult()))
    older = pc.render_snapshot(imported)  # holds Azure's A100 PCIe offers
    (folder / "catalog" / "gpuhunt-2026-11-01-azure.yaml").write_text(older, encoding="utf-8")
    profiles, problems = load_profiles(folder)
    assert problems == [] and any(q.from_catalog for q in profiles["a100-pcie-80gb"].prices)
    (folder / "catalog" / "gpuhunt-2026-12-01-azure.yaml").write_text(pc.render_snapshot(pc.ImportResult()),
                                                                      encoding="utf-8")
    profiles, problems = load_profiles(folder)
    assert problems == [] and not any(q.from_catalog for q in profiles["a100-pcie-80gb"].prices)
    assert [p.name for p in pc.snapshot_files(folder)] == ["gpuhunt-2026-12-01-azure.yaml", "skypilot.yaml"]
    # Only refresh files are dated: a user's own dated-looking files, or an impossible date, are always read.
    for name in ("my-2026-01-01-notes.yaml", "gpuhunt-2026-13-45-azure.yaml", "gpuhunt-2026-01-01-aws-backup.yaml"):
        (folder / "catalog" / name).write_text(pc.render_snapshot(pc.ImportResult()), encoding="utf-8")
    names = [p.name for p in pc.snapshot_files(folder)]
    assert {"my-2026-01-01-notes.yaml", "gpuhunt-2026-13-45-azure.yaml", "gpuhunt-2026-01-01-aws-backup.yaml"} \
        <= set(names) and "gpuhunt-2026-11-01-azure.yaml" not in names


def test_the_shipped_snapshot_is_what_its_raw_files_make(capsys):
    raw, snapshot = pc.CATALOG_DIR / "raw", pc.CATALOG_DIR / "skypilot.yaml"
    assert run(["prices", "import", str(raw), "--out", str(snapshot), "--check"]) == 0


def test_the_shipped_catalog_meets_the_coverage_the_planner_needs():
    # issue 17: 6+ providers, 8-GPU A100 80GB and H100 80GB nodes from 3+ providers, spot for 12+ profiles, LatAm.
    from planner.inputs.regions import region_group

    profiles, _ = load_profiles(DEFAULT_PROFILES_DIR)
    by_profile = {p.id: [q for q in p.prices if q.from_catalog] for p in profiles.values()}
    quotes = [q for qs in by_profile.values() for q in qs]
    assert len({q.provider for q in quotes}) >= 6
    for gpu in ("a100-sxm-80gb", "h100-sxm-80gb"):
        assert len({q.provider for q in by_profile[gpu] if q.gpus_per_instance == 8}) >= 3, gpu
    assert len([g for g, qs in by_profile.items() if any(q.tier == "spot" for q in qs)]) >= 12
    assert any(region_group(q.region) == "latam" for q in quotes)
