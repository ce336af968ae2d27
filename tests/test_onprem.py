"""On-prem cost per GPU type (issue 18): each profile's cited purchase price, power from TDP x a share, overrides."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest
import yaml

from planner.engine import cost as cost_mod
from planner.engine.cost import (
    HOURS_PER_YEAR,
    TDP_UTILISATION,
    NoQuoteError,
    estimate_cost,
    on_prem_capital_usd_per_gpu_hour,
    on_prem_purchase,
    on_prem_unpriced,
    on_prem_usd_per_gpu_hour,
)
from planner.engine.estimates import ConvergenceEstimate, Source, StepEstimate
from planner.engine.option import OptionPlan
from planner.engine.plan import build_plan
from planner.inputs.errors import InputError
from planner.inputs.folders import load_inputs
from planner.inputs.profiles import (
    DEFAULT_PROFILES_DIR,
    GpuProfile,
    load_profile,
    load_profiles,
    parse_profile,
    profile_to_dict,
)
from planner.inputs.scenario import OnPrem, Pricing, Workload, parse_scenario, scenario_to_dict
from planner.present.notes import price_source_text
from planner.present.viewmodel import plan_view
from tests.notes_support import english, texts

TODAY = dt.date(2026, 11, 29)
NO_OVERHEADS = Workload(epochs=1, dataset_samples=1)
PROFILE_FILES = sorted(DEFAULT_PROFILES_DIR.glob("*.yaml"))
# Profiles with no citable purchase price (only third-party aggregator figures that disagree): left unpriced.
UNPRICED = {"a10g-24gb", "l4-24gb", "l40s-48gb", "t4-16gb"}


def shipped(gpu_id: str) -> GpuProfile:
    return load_profile(DEFAULT_PROFILES_DIR / f"{gpu_id}.yaml")


def estimate(gpu: GpuProfile, pricing: Pricing, **kw):
    """estimate_cost for 1 x gpu over one hour (3,600 steps of 1 s), no overheads."""
    step = StepEstimate(1.0, 1.0, 1.0, Source("measured"), (1.0, 1.0))
    conv = ConvergenceEstimate(3600, None, 3600, Source("user"))
    return estimate_cost(OptionPlan(gpu, 1, "bf16"), step, conv, pricing, NO_OVERHEADS, today=TODAY, **kw)


# ---------------------------------------------------------------- the data: one cited price per profile

@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.stem)
def test_every_priced_profile_cites_a_dated_purchase_price(path: Path):
    p = load_profile(path)
    if p.id in UNPRICED:
        assert p.purchase is None
        return
    assert p.purchase is not None, f"{p.id}: no purchase: block"
    assert 100 <= p.purchase.usd <= 100_000
    assert dt.date(2015, 1, 1) <= p.purchase.as_of <= TODAY
    assert "http" in p.purchase.source or "@" in p.purchase.source  # a URL or repository@commit:path


def test_published_purchase_prices_are_transcribed_exactly():
    # NVIDIA launch prices (Epoch chip dataset and the announcements) and Epoch's Hardware prices.csv rows.
    assert (shipped("rtx4090-24gb").purchase.usd, shipped("rtx4090-24gb").purchase.kind) == (1599, "msrp")
    assert shipped("rtx3090-24gb").purchase.usd == 1499
    assert shipped("h100-sxm-80gb").purchase.usd == 31250  # Hardware prices.csv line 561, 2025-03-03
    assert shipped("h100-sxm-80gb").purchase.as_of == dt.date(2025, 3, 3)
    assert shipped("b200-180gb").purchase.kind == "server_per_gpu"  # a DGX price / 8: the host is in it


# ---------------------------------------------------------------- cost per GPU-hour follows the purchase price

def test_rtx4090_vs_h100_cost_per_gpu_hour_reflects_their_purchase_prices():
    rtx, h100 = shipped("rtx4090-24gb"), shipped("h100-sxm-80gb")
    on_prem = OnPrem()  # no override: each GPU's own price
    cap_rtx = on_prem_capital_usd_per_gpu_hour(on_prem, purchase_usd=on_prem_purchase(rtx, on_prem).usd)
    cap_h100 = on_prem_capital_usd_per_gpu_hour(on_prem, purchase_usd=on_prem_purchase(h100, on_prem).usd)
    assert cap_h100 / cap_rtx == pytest.approx(31250 / 1599)
    assert cap_rtx == pytest.approx(1599 / (4 * 8760 * 0.6))
    pricing = Pricing(tier="on_prem", on_prem=on_prem)
    est_rtx, est_h100 = estimate(rtx, pricing), estimate(h100, pricing)
    # Capital + power (TDP x 0.7 / 1000 x PUE 1.4 x $0.12): the H100 costs far more per GPU-hour than the 4090.
    power = lambda tdp: tdp * TDP_UTILISATION / 1000 * 1.4 * 0.12  # noqa: E731
    assert est_rtx.price.usd_per_gpu_hour == pytest.approx(cap_rtx + power(450))
    assert est_h100.price.usd_per_gpu_hour == pytest.approx(cap_h100 + power(700))
    assert est_h100.usd > 5 * est_rtx.usd
    # The source says the purchase price, its kind, date and citation; as_of is the price's date.
    assert "$1,599" in price_source_text(est_rtx.price, "en") and "msrp" in price_source_text(est_rtx.price, "en")
    assert "2022-09-20" in price_source_text(est_rtx.price, "en") and "Chip dataset" in price_source_text(est_rtx.price, "en")
    assert est_rtx.price.as_of == "2022-09-20" and est_h100.price.as_of == "2025-03-03"


def test_the_scenario_override_still_prices_every_gpu_the_same():
    rtx, h100 = shipped("rtx4090-24gb"), shipped("h100-sxm-80gb")
    pricing = Pricing(tier="on_prem", on_prem=OnPrem(purchase_usd_per_gpu=30000))
    est_rtx, est_h100 = estimate(rtx, pricing), estimate(h100, pricing)
    capital = 30000 / (4 * HOURS_PER_YEAR * 0.6)
    assert est_rtx.price.usd_per_gpu_hour - est_h100.price.usd_per_gpu_hour == pytest.approx(
        (450 - 700) * TDP_UTILISATION / 1000 * 1.4 * 0.12)  # only the power differs
    assert est_rtx.price.usd_per_gpu_hour == pytest.approx(capital + 450 * TDP_UTILISATION / 1000 * 1.4 * 0.12)
    assert "scenario override" in price_source_text(est_rtx.price, "en") and est_rtx.price.as_of is None
    # A GPU with no cited price is priced by the override too.
    assert on_prem_unpriced(shipped("t4-16gb"), OnPrem(purchase_usd_per_gpu=2000)) is None


def test_a_package_of_two_devices_charges_half_per_device():
    mi250x = shipped("mi250x-128gb")  # one profile GPU = one GCD; the package (2 GCDs) cost $14,500
    purchase = on_prem_purchase(mi250x, OnPrem())
    assert purchase.usd == pytest.approx(14500 / 2)
    assert "/ 2 devices per package" in purchase.source


def test_purchase_prices_do_not_go_stale_like_rental_quotes():
    est = estimate(shipped("v100-sxm2-16gb"), Pricing(tier="on_prem"))  # a 2018 list price
    assert est.price.as_of == "2018-05-08"
    assert not any("days old" in n or "no date" in n for n in texts(est.notes))


# ---------------------------------------------------------------- power: TDP x a named, overridable share

def test_power_is_tdp_times_the_default_share_with_its_source():
    est = estimate(shipped("rtx4090-24gb"), Pricing(tier="on_prem"))
    assert "TDP 450 W x 0.7" in price_source_text(est.price, "en") and "arXiv:2506.14551" in price_source_text(est.price, "en")
    assert est.energy_kwh == pytest.approx(450 * 0.7 / 1000 * 1.4)  # 1 h x PUE 1.4


def test_scenario_power_fraction_replaces_the_default_for_on_prem_only():
    rtx = shipped("rtx4090-24gb")
    on_prem = OnPrem(power_fraction_of_tdp=0.9)
    est = estimate(rtx, Pricing(tier="on_prem", on_prem=on_prem))
    capital = on_prem_capital_usd_per_gpu_hour(on_prem, purchase_usd=1599)
    assert est.price.usd_per_gpu_hour == pytest.approx(capital + 450 * 0.9 / 1000 * 1.4 * 0.12)
    assert "pricing.on_prem.power_fraction_of_tdp" in price_source_text(est.price, "en")
    assert any("90% of TDP" in n for n in texts(est.notes))
    # Measured power wins over any share of TDP.
    measured = estimate(rtx, Pricing(tier="on_prem", on_prem=on_prem), mean_power_w=300.0)
    assert measured.price.usd_per_gpu_hour == pytest.approx(capital + 0.3 * 1.4 * 0.12)
    assert "measured mean power" in price_source_text(measured.price, "en")
    # Cloud energy keeps the default share.
    assert cost_mod.tdp_fraction(Pricing(tier="on_demand", on_prem=on_prem)) == TDP_UTILISATION


@pytest.mark.parametrize("value", [0, -0.1, 1.2, "high"])
def test_a_bad_power_fraction_is_refused_naming_the_field(value):
    data = {"schema": "trainplan.scenario/1", "model": {"name": "resnet50"}, "training": {"global_batch": 64},
            "workload": {"dataset_samples": 1000, "epochs": 1},
            "pricing": {"on_prem": {"power_fraction_of_tdp": value}}}
    with pytest.raises(InputError, match=r"pricing\.on_prem\.power_fraction_of_tdp"):
        parse_scenario(data)


def test_the_purchase_override_is_optional_and_round_trips():
    base = {"schema": "trainplan.scenario/1", "model": {"name": "resnet50"}, "training": {"global_batch": 64},
            "workload": {"dataset_samples": 1000, "epochs": 1}}
    s = parse_scenario(base)
    assert s.pricing.on_prem.purchase_usd_per_gpu is None
    assert "purchase_usd_per_gpu" not in scenario_to_dict(s)["pricing"]["on_prem"]
    typed = parse_scenario({**base, "pricing": {"on_prem": {"purchase_usd_per_gpu": 45000}}})
    assert typed.pricing.on_prem.purchase_usd_per_gpu == 45000
    assert parse_scenario(scenario_to_dict(typed)) == typed
    with pytest.raises(InputError, match=r"pricing\.on_prem\.purchase_usd_per_gpu"):
        parse_scenario({**base, "pricing": {"on_prem": {"purchase_usd_per_gpu": -5}}})


# ---------------------------------------------------------------- a GPU without a price: unpriced, with a note

def test_a_profile_without_purchase_is_unpriced_with_a_note_naming_it_and_the_fix():
    t4 = shipped("t4-16gb")
    note = on_prem_unpriced(t4, OnPrem())
    assert note is not None and note.key == "on_prem_no_purchase"
    text = english(note)
    assert t4.name in text and "t4-16gb" in text
    assert "purchase:" in text and "pricing.on_prem.purchase_usd_per_gpu" in text
    with pytest.raises(NoQuoteError) as err:
        estimate(t4, Pricing(tier="on_prem"))
    assert err.value.note == note


def test_the_plan_still_builds_with_an_unpriced_on_prem_gpu():
    data = {"schema": "trainplan.scenario/1", "model": {"name": "resnet50"}, "training": {"global_batch": 64},
            "workload": {"dataset_samples": 10000, "epochs": 1},
            "hardware": {"gpus": ["t4-16gb", "rtx4090-24gb"], "gpu_counts": [1]},
            "pricing": {"tier": "on_prem"}}
    plan = build_plan(parse_scenario(data), load_inputs(include_user_data=False), TODAY)
    by_gpu: dict[str, list] = {}
    for o in plan.options:
        by_gpu.setdefault(o.gpu_id, []).append(o)
    t4 = [o for o in by_gpu["t4-16gb"] if o.cost is not None]
    assert t4 and all(o.cost.price is None for o in t4)  # hours, no money
    assert all(o.cost.hours > 0 for o in t4)
    assert any(n.key == "on_prem_no_purchase" for o in t4 for n in o.notes)
    rtx = [o for o in by_gpu["rtx4090-24gb"] if o.cost is not None and o.cost.price is not None]
    assert rtx and all("$1,599" in price_source_text(o.cost.price, "en") for o in rtx)
    # the headline says which GPUs have no purchase price, in both languages
    scenario = parse_scenario(data)
    assert plan_view(plan, scenario, "en").unpriced.startswith("No purchase price for NVIDIA T4 16GB")
    assert "NVIDIA GeForce RTX 4090" not in plan_view(plan, scenario, "en").unpriced
    assert plan_view(plan, scenario, "es").unpriced.startswith("No hay precio de compra para NVIDIA T4 16GB")


# ---------------------------------------------------------------- the profile format: purchase: is checked

def _h100_dict() -> dict:
    return profile_to_dict(shipped("h100-sxm-80gb"))


@pytest.mark.parametrize("change,field", [
    ({"usd": -100}, "purchase.usd"),
    ({"usd": 0}, "purchase.usd"),
    ({"as_of": "2025-13-45"}, "purchase.as_of"),
    ({"as_of": "March 2025"}, "purchase.as_of"),
    ({"source": None}, "purchase.source"),
    ({"source": ""}, "purchase.source"),
    ({"kind": "rumour"}, "purchase.kind"),
    ({"currency": "EUR"}, "purchase"),
])
def test_a_malformed_purchase_block_is_refused_naming_file_and_field(tmp_path, change, field):
    d = _h100_dict()
    d["purchase"] = {k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in d["purchase"].items()}
    d["purchase"].update(change)
    if change.get("source", 1) is None:
        del d["purchase"]["source"]
    path = tmp_path / "h100-sxm-80gb.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_profile(path)
    assert str(path) in str(err.value) and field in str(err.value)
    # Among other profiles, the bad file is one problem message and the rest still load.
    profiles, problems = load_profiles(tmp_path)
    assert not profiles and len(problems) == 1 and field in problems[0]


def test_a_user_profile_without_a_purchase_price_still_loads(tmp_path):
    d = _h100_dict()
    d.update(id="my-h100", purchase=None)
    (tmp_path / "my-h100.yaml").write_text(yaml.safe_dump(d, sort_keys=False), encoding="utf-8")
    profiles, problems = load_profiles(DEFAULT_PROFILES_DIR, tmp_path)
    assert "my-h100" in profiles and profiles["my-h100"].purchase is None
    assert not [p for p in problems if "my-h100" in p]
    assert parse_profile(profile_to_dict(profiles["my-h100"]), profiles["my-h100"].path) == profiles["my-h100"]


def test_capital_needs_a_price_from_somewhere():
    with pytest.raises(ValueError, match="purchase"):
        on_prem_usd_per_gpu_hour(OnPrem(), 300.0)
    assert dataclasses.replace(OnPrem(), purchase_usd_per_gpu=0.0).purchase_usd_per_gpu == 0.0


# ---------------------------------------------------------------- the sidebar: empty = each GPU's own price

@pytest.fixture
def _no_user_data(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))


def test_sidebar_uses_each_gpus_price_until_a_value_is_typed(_no_user_data):
    from streamlit.testing.v1 import AppTest

    from ui import url_codec

    def scenario_on_prem(at) -> dict:
        return scenario_to_dict(url_codec.decode_scenario(at.query_params[url_codec.URL_PARAM]))["pricing"]["on_prem"]

    def row(at, option_id):
        df = at.dataframe[0].value
        return df[df["Option id"] == option_id].iloc[0]

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=60)
    at.session_state["table_details"] = True  # the price column is a detail
    at.run()
    at.checkbox(key="gpus_all").uncheck().run()
    at.multiselect(key="gpus").set_value(["rtx4090-24gb", "h100-sxm-80gb"])
    at.multiselect(key="gpu_counts").set_value([1])
    at.multiselect(key="precisions").set_value(["bf16"])
    at.selectbox(key="tier").set_value("on_prem").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.number_input(key="onprem_purchase").value is None  # empty: each GPU's own cited price
    assert "purchase_usd_per_gpu" not in scenario_on_prem(at)
    rtx, h100 = row(at, "rtx4090-24gb-x1-bf16"), row(at, "h100-sxm-80gb-x1-bf16")
    rate = "Price (USD per GPU-hour)"
    power = lambda tdp: tdp * TDP_UTILISATION / 1000 * 1.4 * 0.12  # noqa: E731 - the default PUE and USD/kWh
    assert rtx[rate] == pytest.approx(1599 / 21024 + power(450), abs=0.001)  # $0.129 per GPU-hour
    assert h100[rate] == pytest.approx(31250 / 21024 + power(700), abs=0.001)  # $1.569 per GPU-hour
    assert "Sep 20, 2022" in rtx["Price source (provider, instance, tier, date)"]  # the purchase price's date
    at.number_input(key="onprem_purchase").set_value(60000.0).run()
    assert scenario_on_prem(at)["purchase_usd_per_gpu"] == 60000.0
    assert row(at, "rtx4090-24gb-x1-bf16")[rate] == pytest.approx(60000 / 21024 + power(450), abs=0.001)
    assert row(at, "h100-sxm-80gb-x1-bf16")[rate] == pytest.approx(60000 / 21024 + power(700), abs=0.001)
    at.number_input(key="onprem_purchase").set_value(None).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "purchase_usd_per_gpu" not in scenario_on_prem(at)
    assert row(at, "rtx4090-24gb-x1-bf16")["Cost (USD)"] == pytest.approx(rtx["Cost (USD)"])


def test_gpus_page_shows_the_purchase_price_or_says_there_is_none(_no_user_data):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "ui" / "gpus_page.py"), default_timeout=120)
    at.run()
    at.selectbox(key="price_gpu").set_value("rtx4090-24gb").run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "Purchase price (on-prem): $1,599" in captions and "msrp" in captions and "pcgamesn" in captions
    at.selectbox(key="price_gpu").set_value("t4-16gb").run()
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "No cited purchase price for NVIDIA T4" in captions


def test_a_per_gpu_share_on_a_multi_device_package_is_refused():
    """The planner divides a purchase price by devices_per_package; a `*_per_gpu` kind is already per GPU, so the
    pair would divide twice (a reviewer's finding): refused, naming the field."""
    d = profile_to_dict(shipped("mi250x-128gb"))
    d["purchase"] = {**d["purchase"], "kind": "server_per_gpu"}
    with pytest.raises(InputError) as err:
        parse_profile(d, "mi250x-128gb.yaml")
    assert err.value.field == "purchase.kind" and "divides by them" in str(err.value)
