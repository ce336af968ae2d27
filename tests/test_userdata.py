"""User price overrides under $TRAINPLAN_HOME: save, replace, remove, and bad files named."""

from __future__ import annotations

import datetime as dt

import pytest

from planner.inputs.errors import InputError
from planner.inputs.profiles import PriceQuote
from planner.inputs.userdata import load_price_overrides, remove_price_override, save_price_override


def _quote(usd: float, provider: str = "acme") -> PriceQuote:
    return PriceQuote(provider=provider, instance="1x", gpus_per_instance=1, usd_per_gpu_hour=usd, tier="on_demand",
                      billing_increment_s=60, region=None, as_of=dt.date(2026, 11, 1), source="our contract",
                      origin="user")


def test_save_replace_and_remove(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path))
    save_price_override("h100-sxm-80gb", _quote(2.0))
    save_price_override("h100-sxm-80gb", _quote(1.5))  # same provider/instance/tier: replaced
    save_price_override("h100-sxm-80gb", _quote(3.0, provider="other"))
    quotes = load_price_overrides()["h100-sxm-80gb"]
    assert sorted(q.usd_per_gpu_hour for q in quotes) == [1.5, 3.0]
    assert all(q.origin == "user" for q in quotes)
    assert remove_price_override("h100-sxm-80gb", "acme", "1x", "on_demand")
    assert [q.provider for q in load_price_overrides()["h100-sxm-80gb"]] == ["other"]
    assert not remove_price_override("h100-sxm-80gb", "acme", "1x", "on_demand")
    assert remove_price_override("h100-sxm-80gb", "other", "1x", "on_demand")
    assert load_price_overrides() == {}


@pytest.mark.parametrize("text,field", [
    ("h100-sxm-80gb: [{usd_per_gpu_hour: -1}]", "h100-sxm-80gb[0].usd_per_gpu_hour"),
    ("h100-sxm-80gb: [{usd_per_gpu_hour: 500}]", "h100-sxm-80gb[0].usd_per_gpu_hour"),
    ("h100-sxm-80gb: [{usd_per_gpu_hour: 2, tier: cheap}]", "h100-sxm-80gb[0].tier"),
    ("h100-sxm-80gb: 3", "h100-sxm-80gb"),
])
def test_a_bad_overrides_file_names_the_field(tmp_path, text, field):
    p = tmp_path / "price_overrides.yaml"
    p.write_text(text)
    with pytest.raises(InputError) as err:
        load_price_overrides(p)
    assert err.value.field == field and "price_overrides.yaml" in str(err.value)
