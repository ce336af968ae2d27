"""Tests for planner.inputs.profiles: every shipped GPU profile, published figures, validation and lookups."""

from __future__ import annotations

import dataclasses
import datetime
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from planner.engine.cost import choose_quote
from planner.inputs.errors import InputError
from planner.inputs.profiles import (
    DEFAULT_PROFILES_DIR,
    GpuProfile,
    PriceQuote,
    current_quotes,
    load_profile,
    load_profiles,
    match_nvml_name,
    parse_profile,
    profile_to_dict,
)
from planner.vocab import PEAK_KEYS, RENTAL_TIERS

PROFILE_FILES = sorted(DEFAULT_PROFILES_DIR.glob("*.yaml"))

# DESIGN.md "Contracts": GPU profile ids, plus the affordable cards the target teams have.
CONTRACT_IDS = {
    "t4-16gb", "v100-sxm2-16gb", "v100-sxm2-32gb", "a10-24gb", "a10g-24gb", "l4-24gb", "l40s-48gb",
    "rtx3090-24gb", "rtx4090-24gb", "rtx-a6000-48gb", "a100-sxm-40gb", "a100-pcie-40gb", "a100-sxm-80gb",
    "a100-pcie-80gb", "h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb", "h200-sxm-141gb", "b200-180gb",
    "mi250x-128gb", "mi300x-192gb",
}
AFFORDABLE_IDS = {"rtx3060-12gb", "rtx4060ti-16gb", "rtx4080-16gb", "p100-16gb"}


@pytest.fixture(scope="module")
def shipped() -> dict[str, GpuProfile]:
    profiles, problems = load_profiles(DEFAULT_PROFILES_DIR)
    assert problems == []
    return profiles


def _gib(gb: float) -> float:
    return gb * 1e9 / 2**30


# ---------------------------------------------------------------- every shipped file

def test_profile_files_are_discovered():
    assert len(PROFILE_FILES) >= len(CONTRACT_IDS | AFFORDABLE_IDS)


@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.stem)
def test_shipped_profile_loads_and_is_in_range(path: Path):
    p = load_profile(path)
    assert p.id == path.stem
    assert 1 <= p.memory_gib <= 1024
    assert 50 <= p.memory_bandwidth_gb_per_s <= 20000
    assert 10 <= p.tdp_w <= 2000
    assert p.sources, "every shipped figure needs a citation"
    assert set(p.peak_tflops) <= set(PEAK_KEYS) and p.supports("fp32")
    assert set(p.estimated_peaks) <= set(p.peak_tflops)
    if p.memory_gb_label is not None:
        label_gib = _gib(p.memory_gb_label)
        if p.memory_gib_source == "datasheet":
            # DRAM is binary-sized: a "16 GB" card carries 16 GiB of chips (drivers report 0-1% less)
            assert p.memory_gib == pytest.approx(p.memory_gb_label, abs=0.01)
        else:  # driver totals sit within a few percent of the label, either side
            assert 0.9 * label_gib <= p.memory_gib <= 1.1 * label_gib
    peaks = p.peak_tflops
    # Matrix rates rank fp32 <= fp16 and tf32 <= fp16 <= fp8; bf16 runs at the fp16 rate on every shipped part.
    if "fp16" in peaks:
        assert peaks["fp16"] >= peaks["fp32"]
    if "tf32" in peaks:
        assert peaks["tf32"] <= peaks["fp16"]
    if "bf16" in peaks:
        assert peaks["bf16"] == peaks["fp16"]
    if "fp8" in peaks:
        assert peaks["fp8"] >= peaks["fp16"]
    if p.vendor == "nvidia":
        assert p.compute_capability and p.compute_capability[0].isdigit()
    for q in p.prices:
        assert q.tier in RENTAL_TIERS and 0 < q.usd_per_gpu_hour <= 200
        assert q.as_of is None or q.as_of >= datetime.date(2015, 1, 1)
        assert q.billing_increment_s in (1, 60, 3600)
        assert q.origin == "published"


def test_contract_ids_are_all_shipped(shipped):
    assert CONTRACT_IDS <= set(shipped)
    assert AFFORDABLE_IDS <= set(shipped)


@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.stem)
def test_round_trip_parse_dict_parse(path: Path):
    p = load_profile(path)
    assert parse_profile(profile_to_dict(p), p.path) == p
    # Through YAML text too, as a user-edited copy would travel.
    again = yaml.safe_load(yaml.safe_dump(profile_to_dict(p), sort_keys=False, allow_unicode=True))
    assert parse_profile(again, p.path) == p
    assert hash(p) == hash(parse_profile(again, p.path))


# ---------------------------------------------------------------- published figures (tolerance + source)

def test_h100_sxm_dense_bf16(shipped):
    # NVIDIA H100 datasheet prints 1,979 TFLOPS BF16 "*with sparsity"; dense is half: 989.5 (989.4 exact).
    h100 = shipped["h100-sxm-80gb"]
    assert h100.peak_tflops_for("bf16") == pytest.approx(989.5, abs=0.2)
    assert h100.peak_tflops_for("fp8") == pytest.approx(1979, abs=0.5)  # 3,958* sparse / 2
    assert h100.interconnect.per_direction_gb_per_s == 450  # NVLink 4: 900 GB/s total, 450 each way


@pytest.mark.parametrize("gpu_id", ["a100-sxm-40gb", "a100-pcie-40gb", "a100-sxm-80gb", "a100-pcie-80gb"])
def test_a100_dense_bf16(shipped, gpu_id):
    # NVIDIA A100 datasheet r4: BF16 tensor 312 dense | 624 sparse; TF32 156 | 312.
    assert shipped[gpu_id].peak_tflops_for("bf16") == pytest.approx(312, abs=0.5)
    assert shipped[gpu_id].peak_tflops_for("tf32") == pytest.approx(156, abs=0.5)


def test_rtx3090_uses_fp32_accumulate_rate(shipped):
    # GA102 whitepaper Appendix A: 71 TF FP16 tensor with FP32 accumulate, 142 with FP16 accumulate (GeForce
    # half rate); mixed-precision training accumulates in FP32, so the planner must see 71, not 142.
    fp16 = shipped["rtx3090-24gb"].peak_tflops_for("fp16")
    assert fp16 == pytest.approx(71, abs=0.5)
    assert fp16 != pytest.approx(142, abs=1)


def test_rtx4090_uses_fp32_accumulate_rate(shipped):
    # Ada whitepaper appendix: 165.2 TF FP16/BF16 with FP32 accumulate (330.3 with FP16 accumulate).
    assert shipped["rtx4090-24gb"].peak_tflops_for("bf16") == pytest.approx(165.2, abs=0.2)


@pytest.mark.parametrize("gpu_id", ["t4-16gb", "v100-sxm2-16gb", "v100-sxm2-32gb", "p100-16gb"])
def test_pre_ampere_parts_have_no_tf32_or_bf16(shipped, gpu_id):
    # Turing/Volta/Pascal have no TF32 or BF16 tensor path (T4, V100 datasheets; docs/methods.md#step-time "Peak choice").
    p = shipped[gpu_id]
    assert not p.supports("bf16") and not p.supports("tf32")
    assert p.peak_tflops_for("bf16") is None
    assert p.supports("fp16") and p.supports("fp32")


def test_t4_published_rates(shipped):
    # T4 datasheet: 8.1 TF FP32 (CUDA cores), 65 TF FP16 mixed precision (tensor cores), 70 W.
    t4 = shipped["t4-16gb"]
    assert t4.peak_tflops_for("fp32") == pytest.approx(8.1, abs=0.05)
    assert t4.peak_tflops_for("fp16") == pytest.approx(65, abs=0.5)
    assert t4.tdp_w == 70


def test_l4_dense_is_half_the_sparse_datasheet(shipped):
    # L4 datasheet prints sparse only: FP16/BF16 242*, FP8 485* -> dense 121 / 242.5.
    l4 = shipped["l4-24gb"]
    assert l4.peak_tflops_for("bf16") == pytest.approx(121, abs=0.5)
    assert l4.peak_tflops_for("fp8") == pytest.approx(242.5, abs=0.5)


def test_mi250x_profile_is_one_gcd(shipped):
    # AMD MI250X: 128 GB, 383 TF FP16/BF16 per package of two GCDs; torch sees each GCD as a device.
    mi = shipped["mi250x-128gb"]
    assert mi.devices_per_package == 2
    assert 59 <= mi.memory_gib <= 64.5  # 64 GB per GCD = 59.6 GiB
    assert mi.peak_tflops_for("bf16") == pytest.approx(383 / 2, abs=0.5)
    assert not mi.supports("tf32")


def test_driver_capacities(shipped):
    # docs/methods.md#memory: H200 143,771 MiB; H100 80GB 81,559 MiB; A100 80GB 81,920 MiB (nvidia-smi totals).
    h200 = shipped["h200-sxm-141gb"]
    assert h200.memory_gib == pytest.approx(140.4, abs=0.05) and h200.memory_gib_source == "driver"
    assert shipped["h100-sxm-80gb"].memory_gib == pytest.approx(81559 / 1024, abs=0.01)
    assert shipped["a100-sxm-80gb"].memory_gib == pytest.approx(80.0, abs=0.01)


def test_estimated_peaks_are_flagged(shipped):
    # NVIDIA publishes no A10G tensor figure: its peaks must be marked as estimates with a source.
    a10g = shipped["a10g-24gb"]
    assert a10g.is_estimated("bf16") and "third-party" in a10g.estimated_peaks["bf16"]
    assert not shipped["h100-sxm-80gb"].is_estimated("bf16")


# ---------------------------------------------------------------- malformed files

def _base() -> dict:
    return yaml.safe_load((DEFAULT_PROFILES_DIR / "t4-16gb.yaml").read_text(encoding="utf-8"))


def _write(directory: Path, stem: str, data: dict | str) -> Path:
    path = directory / f"{stem}.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _variant(stem: str, **changes) -> dict:
    data = _base()
    data["id"] = stem
    data.update(changes)
    return data


def test_malformed_profiles_are_reported_by_file_and_field(tmp_path):
    shutil.copy(DEFAULT_PROFILES_DIR / "t4-16gb.yaml", tmp_path / "t4-16gb.yaml")
    _write(tmp_path, "bad-yaml", "schema: trainplan.gpu/1\nid: [unclosed\n")
    _write(tmp_path, "unknown-key", _variant("unknown-key", colour="red"))
    negative = _variant("negative-price")
    negative["prices"][2]["usd_per_gpu_hour"] = -1.0
    _write(tmp_path, "negative-price", negative)
    _write(tmp_path, "peak-string", _variant("peak-string", peak_tflops={"fp32": "fast", "fp16": 65}))
    _write(tmp_path, "id-mismatch", _variant("something-else"))

    profiles, problems = load_profiles(tmp_path)

    assert set(profiles) == {"t4-16gb"}  # the good file still loads
    expected = {
        "bad-yaml.yaml": "YAML syntax",
        "unknown-key.yaml": "colour",
        "negative-price.yaml": "prices[2].usd_per_gpu_hour",
        "peak-string.yaml": "peak_tflops.fp32",
        "id-mismatch.yaml": ": id:",
    }
    assert len(problems) == len(expected)
    for filename, field in expected.items():
        [message] = [m for m in problems if filename in m]
        assert field in message


def test_later_directory_overrides_earlier(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    _write(user, "t4-16gb", _variant("t4-16gb", name="Our T4"))
    profiles, problems = load_profiles(DEFAULT_PROFILES_DIR, user)
    assert problems == []
    assert profiles["t4-16gb"].name == "Our T4"
    assert profiles["h100-sxm-80gb"].name.startswith("NVIDIA H100")


def test_missing_directory_is_skipped(tmp_path):
    profiles, problems = load_profiles(tmp_path / "absent")
    assert profiles == {} and problems == []


def test_duplicate_yaml_key_is_an_error(tmp_path):
    text = (DEFAULT_PROFILES_DIR / "t4-16gb.yaml").read_text(encoding="utf-8") + "tdp_w: 71\n"
    path = _write(tmp_path, "t4-16gb", text)
    with pytest.raises(InputError, match="duplicate key 'tdp_w'"):
        load_profile(path)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"memory_gib": 0.5}, "memory_gib"),
        ({"memory_gib": True}, "memory_gib"),
        ({"memory_bandwidth_gb_per_s": 30000}, "memory_bandwidth_gb_per_s"),
        ({"tdp_w": 5}, "tdp_w"),
        ({"peak_tflops": {"fp32": 8.1, "int8": 130}}, "peak_tflops.int8"),
        ({"peak_tflops": {"fp16": 65}}, "peak_tflops.fp32"),
        ({"peak_tflops": {"fp32": 20000}}, "peak_tflops.fp32"),
        ({"estimated_peaks": {"bf16": "guess"}}, "estimated_peaks.bf16"),
        ({"memory_gib_source": "guess"}, "memory_gib_source"),
        ({"compute_capability": 7.5}, "compute_capability"),
        ({"vendor": "NVIDIA"}, "vendor"),
        ({"schema": "trainplan.gpu/2"}, "schema"),
        ({"interconnect": {"kind": "nvlink", "gb_per_s": 300}}, "interconnect.gb_per_s"),
        ({"nvml_names": "Tesla T4"}, "nvml_names"),
    ],
)
def test_bad_fields_name_the_field(change, field):
    with pytest.raises(InputError) as info:
        parse_profile(_variant("t4-16gb", **change), "t4-16gb.yaml")
    assert info.value.field == field
    assert info.value.source == "t4-16gb.yaml"


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("tier", "hourly", "prices[0].tier"),
        ("as_of", "Nov 2026", "prices[0].as_of"),
        ("gpus_per_instance", 0, "prices[0].gpus_per_instance"),
        ("usd_per_gpu_hour", "0.5", "prices[0].usd_per_gpu_hour"),
        ("usd_per_gpu_hour", 0, "prices[0].usd_per_gpu_hour"),
        ("usd_per_gpu_hour", 250, "prices[0].usd_per_gpu_hour"),
        ("billing", 60, "prices[0].billing"),
    ],
)
def test_bad_price_fields_name_the_field(key, value, field):
    data = _variant("t4-16gb")
    data["prices"][0][key] = value
    with pytest.raises(InputError) as info:
        parse_profile(data, "t4-16gb.yaml")
    assert info.value.field == field


def test_missing_required_key_is_named():
    data = _variant("t4-16gb")
    del data["memory_gib"]
    with pytest.raises(InputError, match="memory_gib"):
        parse_profile(data, "t4-16gb.yaml")


def test_minimal_profile_gets_defaults():
    data = {"schema": "trainplan.gpu/1", "id": "lab-gpu", "name": "Lab GPU", "vendor": "other",
            "memory_gib": 10, "memory_gib_source": "driver", "memory_bandwidth_gb_per_s": 400,
            "peak_tflops": {"fp32": 10}, "tdp_w": 200,
            "prices": [{"provider": "us", "instance": "box", "usd_per_gpu_hour": 0.2, "tier": "on_demand",
                        "source": "our invoice", "as_of": "2026-10-01", "origin": "user"}]}
    p = parse_profile(data, "lab-gpu.yaml")
    assert p.devices_per_package == 1 and p.interconnect is None and p.nvml_names == ()
    [q] = p.prices
    assert q.as_of == datetime.date(2026, 10, 1) and q.billing_increment_s == 3600 and q.origin == "user"
    assert parse_profile(profile_to_dict(p), p.path) == p


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_price_range_property(usd):
    data = _variant("t4-16gb")
    data["prices"][0]["usd_per_gpu_hour"] = usd
    if 0 < usd <= 200:
        assert parse_profile(data, "t4-16gb.yaml").prices[0].usd_per_gpu_hour == usd
    else:
        with pytest.raises(InputError):
            parse_profile(data, "t4-16gb.yaml")


# ---------------------------------------------------------------- NVML name matching

@pytest.mark.parametrize(
    ("name", "gpu_id"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm-80gb"),
        ("NVIDIA H200", "h200-sxm-141gb"),
        ("H200", "h200-sxm-141gb"),
        ("nvidia a100 80gb pcie", "a100-pcie-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"),
        ("GeForce RTX 3090", "rtx3090-24gb"),
        ("NVIDIA GeForce RTX 4060 Ti", "rtx4060ti-16gb"),
        ("Tesla T4", "t4-16gb"),
        ("AMD Instinct MI250X/MI250", "mi250x-128gb"),
        ("h100-pcie-80gb", "h100-pcie-80gb"),
    ],
)
def test_match_known_names(shipped, name, gpu_id):
    assert match_nvml_name(name, shipped).id == gpu_id


@pytest.mark.parametrize(
    "name",
    [
        "Some Unknown GPU 9000",
        "",
        "H100",  # SXM, PCIe and NVL all contain it: ambiguous
        "NVIDIA H200 NVL",  # a different product from the H200 SXM
        "NVIDIA GeForce RTX 3060 Ti",  # not the RTX 3060
        "NVIDIA GeForce RTX 4080 SUPER",
        "NVIDIA A100-SXM4-80GB MIG 3g.40gb",  # a MIG slice, not the whole GPU
        "Tesla V100-PCIE-16GB",  # no profile for the PCIe V100
    ],
)
def test_unknown_or_ambiguous_names_give_none(shipped, name):
    assert match_nvml_name(name, shipped) is None


def test_every_alias_matches_its_own_profile(shipped):
    for profile in shipped.values():
        for alias in profile.nvml_names:
            assert match_nvml_name(alias, shipped) is profile
            assert match_nvml_name(alias, list(shipped.values())) is profile


# ---------------------------------------------------------------- quotes

def _quote(usd, as_of, provider="aws", instance="p5.48xlarge", tier="on_demand", origin="published", region=None):
    return PriceQuote(provider, instance, 8, usd, tier, 1, region, as_of, "test", origin)


def _with_prices(profile: GpuProfile, *quotes: PriceQuote) -> GpuProfile:
    return dataclasses.replace(profile, prices=tuple(quotes))


def test_newer_quote_supersedes_older_for_same_instance(shipped):
    p = _with_prices(shipped["h100-sxm-80gb"],
                     _quote(2.0, datetime.date(2025, 1, 1)), _quote(6.88, datetime.date(2026, 11, 9)),
                     _quote(3.0, datetime.date(2026, 9, 25), provider="runpod", instance="H100 SXM"))
    assert choose_quote(p.prices, "on_demand").usd_per_gpu_hour == 3.0
    assert choose_quote(p.prices, "on_demand", provider="AWS").usd_per_gpu_hour == 6.88
    # As of an earlier day, the later quotes did not exist yet.
    assert choose_quote(p.prices, "on_demand", today=datetime.date(2025, 6, 1)).usd_per_gpu_hour == 2.0


def test_user_override_beats_published_and_dated_beats_undated():
    quotes = [_quote(5.0, datetime.date(2026, 11, 9)), _quote(9.0, datetime.date(2020, 1, 1), origin="user"),
              _quote(1.0, None, instance="x"), _quote(4.0, datetime.date(2026, 1, 1), instance="x")]
    by_instance = {q.instance: q.usd_per_gpu_hour for q in current_quotes(quotes)}
    assert by_instance == {"p5.48xlarge": 9.0, "x": 4.0}


def test_choose_quote_edge_cases(shipped):
    h100 = shipped["h100-sxm-80gb"]
    assert choose_quote(h100.prices, "reserved_3y").usd_per_gpu_hour == pytest.approx(4.86)
    assert choose_quote(h100.prices, "on_demand", provider="aws").usd_per_gpu_hour == pytest.approx(6.88)
    assert choose_quote(shipped["mi250x-128gb"].prices, "on_demand") is None
    assert choose_quote(h100.prices, "on_prem") is None  # on-prem is priced from purchase and power


def test_undated_quotes_stay_available(shipped):
    # MI300X prices in the reference are undated aggregator figures: kept, with as_of None, for the planner to flag.
    q = choose_quote(shipped["mi300x-192gb"].prices, "on_demand")
    assert q is not None and q.as_of is None


@pytest.mark.parametrize("gpu_id,mib", [("rtx4090-24gb", 24564), ("t4-16gb", 15360), ("a100-sxm-40gb", 40960),
                                        ("l4-24gb", 23034), ("b200-180gb", 183359), ("v100-sxm2-32gb", 32510)])
def test_capacity_is_the_driver_reported_total(gpu_id, mib):
    # docs/methods.md#memory: capacity = what nvidia-smi reports (public nvidia-smi logs), not the datasheet's decimal GB
    assert load_profile(DEFAULT_PROFILES_DIR / f"{gpu_id}.yaml").memory_gib == pytest.approx(mib / 1024, abs=0.005)
