"""planner.inputs.user_profiles: the GPUs & prices table, price overrides, adding a profile (validated like shipped ones)."""

from __future__ import annotations

import datetime as dt

import pytest

from planner.inputs import user_profiles as up
from planner.inputs.errors import InputError
from planner.inputs.profiles import load_profiles, parse_profile
from planner.inputs.userdata import load_price_overrides, save_price_override
from planner.present import gpu_table as gt

TODAY = dt.date(2026, 11, 29)
SHIPPED = set(load_profiles()[0])


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _profile(pid="test-gpu", prices=(), path=None):
    data = {"schema": "trainplan.gpu/1", "id": pid, "name": f"Test {pid}", "vendor": "nvidia", "memory_gib": 22.5,
            "memory_gib_source": "driver", "memory_bandwidth_gb_per_s": 900, "peak_tflops": {"fp32": 30, "bf16": 120},
            "estimated_peaks": {"bf16": "derived"}, "tdp_w": 300, "prices": list(prices), "sources": ["test"]}
    return parse_profile(data, path or f"/shipped/{pid}.yaml")


def _quote(usd, tier="on_demand", as_of="2026-10-01", provider="cloud", instance="x1"):
    return {"provider": provider, "instance": instance, "usd_per_gpu_hour": usd, "tier": tier, "as_of": as_of,
            "source": "test"}


# ---------------------------------------------------------------- table

def test_rows_show_the_cheapest_quote_of_the_tier_and_flag_stale_ones():
    fresh = _profile("fresh", [_quote(2.0), _quote(1.5, provider="other"), _quote(0.7, tier="spot")])
    old = _profile("old", [_quote(1.0, as_of="2025-01-01")])
    undated = _profile("undated", [_quote(1.0, as_of=None)])
    none = _profile("none")
    rows = {r.id: r for r in gt.profile_rows({p.id: p for p in (fresh, old, undated, none)}, {}, "on_demand", TODAY)}
    assert (rows["fresh"].usd_per_gpu_hour, rows["fresh"].provider, rows["fresh"].stale) == (1.5, "other", False)
    assert rows["fresh"].price_age_days == (TODAY - dt.date(2026, 10, 1)).days
    assert rows["old"].stale and rows["old"].price_age_days > 180
    assert rows["undated"].stale and rows["undated"].price_age_days is None
    assert rows["none"].usd_per_gpu_hour is None and not rows["none"].stale
    spot = {r.id: r for r in gt.profile_rows({"fresh": fresh}, {}, "spot", TODAY)}
    assert spot["fresh"].usd_per_gpu_hour == 0.7
    assert rows["fresh"].peaks == {"fp32": 30.0, "tf32": None, "fp16": None, "bf16": 120.0, "fp8": None}
    assert rows["fresh"].estimated == ("bf16",)


def test_a_user_price_is_used_and_labelled_user_and_is_never_stale():
    p = _profile("g", [_quote(2.0, as_of="2024-01-01")])
    mine = up.override_quote("g", ["g"], provider="cloud", instance="x1", usd_per_gpu_hour=0.9, tier="on_demand",
                             as_of=None)
    [row] = gt.profile_rows({"g": p}, {"g": [mine]}, "on_demand", TODAY)
    assert (row.usd_per_gpu_hour, row.price_origin, row.stale, row.n_quotes) == (0.9, "user", False, 2)
    quotes = gt.quotes_of(p, [mine], TODAY)
    assert [(q["usd_per_gpu_hour"], q["origin"], q["stale"], q["replaced"]) for q in quotes] == [
        (0.9, "user", False, False), (2.0, "published", True, True)]


def test_added_by_you_is_the_user_folder(home):
    mine = _profile("mine", path=str(home / "gpu_profiles" / "mine.yaml"))
    rows = {r.id: r.added_by_you for r in gt.profile_rows({"mine": mine, "x": _profile("x")}, {}, "on_demand", TODAY)}
    assert rows == {"mine": True, "x": False}


# ---------------------------------------------------------------- price overrides

@pytest.mark.parametrize("changes, field", [
    ({"usd_per_gpu_hour": 0.0}, "quote.usd_per_gpu_hour"),
    ({"usd_per_gpu_hour": 250.0}, "quote.usd_per_gpu_hour"),
    ({"provider": "  "}, "quote.provider"),
    ({"tier": "on_prem"}, "quote.tier"),
    ({"gpus_per_instance": 0}, "quote.gpus_per_instance"),
])
def test_override_is_checked_like_a_shipped_quote(changes, field):
    kwargs = {"provider": "p", "instance": "i", "usd_per_gpu_hour": 1.0, "tier": "on_demand", **changes}
    with pytest.raises(InputError) as e:
        up.override_quote("h100-sxm-80gb", SHIPPED, **kwargs)
    assert e.value.field == field


def test_override_for_an_unknown_gpu_is_refused():
    with pytest.raises(InputError, match="known GPU profile"):
        up.override_quote("no-such-gpu", SHIPPED, provider="p", instance="i", usd_per_gpu_hour=1.0, tier="spot")


def test_saved_override_reads_back_as_user(home):
    q = up.override_quote("l4-24gb", SHIPPED, provider="mycloud", instance="l4", usd_per_gpu_hour=0.31,
                          tier="on_demand", billing_increment_s=60, as_of=TODAY, source="contract")
    save_price_override("l4-24gb", q)
    [back] = load_price_overrides()["l4-24gb"]
    assert (back.usd_per_gpu_hour, back.origin, back.billing_increment_s, back.as_of) == (0.31, "user", 60, TODAY)


# ---------------------------------------------------------------- adding a profile

FORM = {"id": "rtx5090-32gb", "name": "NVIDIA GeForce RTX 5090", "vendor": "nvidia", "architecture": "Blackwell",
        "compute_capability": "12.0", "nvml_names": "NVIDIA GeForce RTX 5090", "memory_gib": 31.36,
        "memory_gib_source": "driver", "memory_bandwidth_gb_per_s": 1792.0, "fp32": 104.8, "fp16": 209.5,
        "bf16": 209.5, "tdp_w": 575.0, "interconnect_kind": "pcie5", "interconnect_gb_per_s": 128.0, "pcie_gen": 5,
        "sources": "https://example.invalid/rtx5090-datasheet\npython -m bench detect on box (2026-11-29)"}


def test_a_good_form_saves_a_profile_that_loads_like_the_shipped_ones(home):
    profile = up.validate_new_profile(up.profile_data(FORM), SHIPPED)
    path = up.save_profile(profile)
    assert path == home / "gpu_profiles" / "rtx5090-32gb.yaml"
    loaded, problems = load_profiles(home / "gpu_profiles")
    assert problems == []
    got = loaded["rtx5090-32gb"]
    assert got.peak_tflops == {"fp32": 104.8, "fp16": 209.5, "bf16": 209.5}
    assert got.nvml_names == ("NVIDIA GeForce RTX 5090",)
    assert got.interconnect.bidirectional_gb_per_s == 128 and got.pcie_gen == 5
    assert len(got.sources) == 2
    shipped, _ = load_profiles()
    assert "rtx5090-32gb" not in shipped  # the shipped folder is never written


@pytest.mark.parametrize("changes, field", [
    ({"id": ""}, "id"),
    ({"id": "Bad ID"}, "id"),
    ({"id": "h100-sxm-80gb"}, "id"),
    ({"name": " "}, "name"),
    ({"fp32": None}, "peak_tflops.fp32"),
    ({"fp16": 0.01}, "peak_tflops.fp16"),
    ({"memory_gib": None}, "memory_gib"),
    ({"memory_gib": 5000.0}, "memory_gib"),
    ({"memory_bandwidth_gb_per_s": 10.0}, "memory_bandwidth_gb_per_s"),
    ({"tdp_w": None}, "tdp_w"),
    ({"compute_capability": "twelve"}, "compute_capability"),
    ({"interconnect_kind": "", "interconnect_gb_per_s": 64.0}, "interconnect.kind"),
    ({"sources": ""}, "sources"),
])
def test_a_bad_form_names_the_field_and_writes_nothing(changes, field, home):
    with pytest.raises(InputError) as e:
        up.validate_new_profile(up.profile_data({**FORM, **changes}), SHIPPED)
    assert e.value.field == field
    assert not home.exists()


def test_an_added_profile_is_never_replaced(home):
    up.save_profile(up.validate_new_profile(up.profile_data(FORM), SHIPPED))
    with pytest.raises(InputError, match="not already used"):
        up.validate_new_profile(up.profile_data(FORM), SHIPPED)
    with pytest.raises(InputError, match="not already used"):
        up.save_profile(up.validate_new_profile(up.profile_data(FORM), SHIPPED, folder=home / "elsewhere"),
                        folder=home / "gpu_profiles")


# ---------------------------------------------------------------- prefill from `bench detect --json`

DETECTED = {
    "hostname": "box", "device": "cuda", "torch": "2.13.0", "cuda": "13.0",
    "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "total_memory_bytes": 33_670_000_000,
              "capability": "12.0", "profile_id": None,
              "nvml": {"name": "NVIDIA GeForce RTX 5090", "memory_total_bytes": 34_190_000_000,
                       "power_limit_w": 575.0}}],
    "nvml_gpus": [],
}


def test_prefill_takes_name_memory_capability_and_power_from_detect():
    v = up.prefill_from_detect(DETECTED, today=TODAY)
    assert v["name"] == "NVIDIA GeForce RTX 5090" and v["nvml_names"] == "NVIDIA GeForce RTX 5090"
    assert v["memory_gib"] == round(34_190_000_000 / 2**30, 2) and v["memory_gib_source"] == "driver"
    assert (v["compute_capability"], v["tdp_w"], v["vendor"]) == ("12.0", 575.0, "nvidia")
    assert v["id"] == "rtx-5090-32gb"
    assert "bench detect on box (2026-11-29)" in v["sources"]
    with pytest.raises(InputError, match="peak_tflops"):  # the datasheet figures are still the user's to give
        up.validate_new_profile(up.profile_data(v), SHIPPED)
    done = up.validate_new_profile(up.profile_data({**v, "fp32": 104.8, "memory_bandwidth_gb_per_s": 1792.0}),
                                   SHIPPED)
    assert done.memory_gib_source == "driver"


def test_prefill_from_nvml_when_torch_has_no_cuda():
    facts = {"device": "cpu", "gpus": [], "nvml_gpus": [{"index": 0, "name": "NVIDIA L4",
                                                         "memory_total_bytes": 24_152_899_584}]}
    v = up.prefill_from_detect(facts, today=TODAY)
    assert v["name"] == "NVIDIA L4" and v["memory_gib"] == 22.49 and v["compute_capability"] == ""


def test_no_gpu_no_prefill():
    assert up.prefill_from_detect({"device": "cpu", "gpus": [], "nvml_gpus": []}) is None


@pytest.mark.parametrize("name, gib, expected", [
    ("NVIDIA H100 80GB HBM3", 79.6, "h100-80gb-hbm3"),
    ("AMD Instinct MI300X", 191.5, "instinct-mi300x-192gb"),
    ("Tesla T4", 14.6, "t4-16gb"),
])
def test_suggest_id(name, gib, expected):
    assert up.suggest_id(name, gib) == expected


@pytest.mark.parametrize("gib, label", [(79.6, 80), (31.36, 32), (22.49, 24), (140.4, 141), (11.77, 12), (10.76, 11), (7.6, 8)])
def test_memory_label(gib, label):
    assert up.memory_label(gib) == label
