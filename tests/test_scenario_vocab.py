"""Enumerated scenario fields (issue 34): data location, region group and stack are checked against their lists with
the allowed values in the message; `other` is a data location outside the list (no egress counted, with a note);
a provider no loaded profile or override has is a plan warning, never a refusal."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import zlib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.engine.datacost import data_cost
from planner.engine.plan import build_plan
from planner.inputs.errors import InputError
from planner.inputs.fields import AT_PATH
from planner.inputs.folders import load_inputs
from planner.inputs.profiles import PriceQuote
from planner.inputs.scenario import load_scenario_text
from planner.inputs.storage import load_storage
from planner.vocab import DATA_LOCATIONS, DATA_OTHER, REGION_GROUPS, SOFTWARE_STACKS
from tests.fixtures.bad.make_bad import scenario_text
from ui import panels, sidebar

ROOT = Path(__file__).resolve().parents[1]
TODAY = dt.date(2026, 12, 8)
WORKLOAD = "workload:\n  dataset_samples: 10000\n  epochs: 1\n  dataset_gb: 10\n  data_location: {}"
TRAINING = "training:\n  global_batch: 64\n  precisions: [bf16]\n  stack: {}"
PRICING = "pricing:\n  region_group: {}"


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(include_user_data=False)


@pytest.mark.parametrize("over, field, choices", [
    ({"workload": WORKLOAD.format("gcpp")}, "workload.data_location", DATA_LOCATIONS),
    ({"workload": WORKLOAD.format("s3")}, "workload.data_location", DATA_LOCATIONS),
    ({"workload": WORKLOAD.format("'aws '")}, None, None),  # surrounding spaces: still aws
    ({"training": TRAINING.format("pytorch")}, "training.stack", SOFTWARE_STACKS),
    ({"training": TRAINING.format("hf_trainer")}, "training.stack", SOFTWARE_STACKS),
    ({"pricing": PRICING.format("latinoamerica")}, "pricing.region_group", REGION_GROUPS),
    ({"pricing": PRICING.format("EU")}, "pricing.region_group", REGION_GROUPS),
])
def test_a_value_outside_its_list_is_refused_with_the_allowed_values(over, field, choices):
    text = scenario_text(**over)
    if field is None:
        assert load_scenario_text(text, "s.yaml").workload.data_location == "aws"
        return
    with pytest.raises(InputError) as error:
        load_scenario_text(text, "s.yaml")
    message = str(error.value)
    assert message.startswith(f"s.yaml: {field}: got ")
    for choice in choices:
        assert choice in message, (choice, message)


def test_the_lists_are_the_field_table_rows():
    assert AT_PATH["workload.data_location"].choices == DATA_LOCATIONS
    assert AT_PATH["training.stack"].choices == SOFTWARE_STACKS
    assert AT_PATH["pricing.region_group"].choices == REGION_GROUPS


@pytest.mark.parametrize("given, read", [("GCP", "gcp"), ("local", "local"), ("on-prem", "on_prem"),
                                         ("Other", "other"), ("vultr", "vultr")])
def test_listed_data_locations_read_in_any_case(given, read):
    assert load_scenario_text(scenario_text(workload=WORKLOAD.format(given))).workload.data_location == read


def test_every_provider_the_shipped_data_prices_is_a_data_location(inputs):
    quoted = {q.provider.lower() for p in inputs.profiles.values() for q in p.prices}
    stored = set(load_storage().providers)
    assert quoted | stored <= set(DATA_LOCATIONS), sorted((quoted | stored) - set(DATA_LOCATIONS))


def test_other_adds_no_egress_and_says_so():
    table = load_storage()
    kw = {"gpu_provider": "gcp", "hours": 10.0, "instances": 2, "runs": 1, "table": table}
    other = data_cost(100.0, data_location=DATA_OTHER, **kw)
    local = data_cost(100.0, data_location="local", **kw)
    aws = data_cost(100.0, data_location="oracle", **kw)  # a priced provider: egress counted
    assert other.usd == local.usd and other.storage_usd == local.storage_usd  # cost-neutral
    assert other.egress_usd is None and local.egress_usd == 0.0
    assert [n.key for n in other.notes if n.key.startswith("data_location")] == ["data_location_other"]
    assert aws.egress_usd and aws.usd > local.usd


def _plan(inputs, pricing: str):
    return build_plan(load_scenario_text(scenario_text(pricing=pricing), "s.yaml"), inputs, TODAY)


def test_an_unknown_provider_is_a_plan_warning_not_a_refusal(inputs):
    plan = _plan(inputs, "pricing:\n  provider: awz")
    [warning] = [w for w in plan.warnings if getattr(w, "key", None) == "provider_unknown"]
    assert warning.params["provider"] == "awz" and "aws" in warning.params["known"]
    assert plan.options  # still planned
    for pricing in ("pricing:\n  provider: AWS", "pricing:\n  currency: USD", "pricing:\n  tier: on_prem\n  "
                    "provider: my-lab"):
        assert not [w for w in _plan(inputs, pricing).warnings if getattr(w, "key", None) == "provider_unknown"]


def test_a_provider_only_the_overrides_have_is_known(inputs):
    quote = PriceQuote(provider="acme", instance="1x", gpus_per_instance=1, usd_per_gpu_hour=2.0, tier="on_demand",
                       billing_increment_s=60, region=None, as_of=dt.date(2026, 11, 1), source="our contract")
    with_override = dataclasses.replace(inputs, price_overrides={"h100-sxm-80gb": [quote]})
    plan = build_plan(load_scenario_text(scenario_text(pricing="pricing:\n  provider: acme"), "s.yaml"),
                      with_override, TODAY)
    assert not [w for w in plan.warnings if getattr(w, "key", None) == "provider_unknown"]
    assert [o.cost.price.provider for o in plan.options if o.cost and o.cost.price] == ["acme"]


def _link(text: str) -> str:
    return base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")


@pytest.mark.slow
def test_the_app_shows_the_same_message_for_a_link_and_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    text = scenario_text(workload=WORKLOAD.format("gcpp"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params.update({"s": _link(text)})
    at.run()
    assert not at.exception
    shown = " ".join(e.value for e in at.error).replace("\\", "")
    assert "workload.data_location: got 'gcpp'" in shown and "other" in shown and "vultr" in shown
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    panels.open_panels(at.session_state, sidebar.FILE_PANEL)  # the uploader is built while its panel is open
    at.run()
    at.file_uploader(key="upload").set_value(("bad.yaml", text.encode(), "application/x-yaml")).run()
    shown = " ".join(e.value for e in at.error).replace("\\", "")
    assert "bad.yaml: workload.data_location: got 'gcpp'" in shown and "other" in shown


def test_regions_no_loaded_quote_is_in_are_a_warning_naming_them(inputs):
    plan = _plan(inputs, "pricing:\n  regions: [us-east-1, us-eats-1]")
    [warning] = [w for w in plan.warnings if getattr(w, "key", None) == "regions_unknown"]
    assert warning.params["regions"] == "us-eats-1" and "us-east-1" in warning.params["known"]
    assert plan.options
    known = _plan(inputs, "pricing:\n  regions: [US-EAST-1]")
    assert not [w for w in known.warnings if getattr(w, "key", None) == "regions_unknown"]
