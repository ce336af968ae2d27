"""Presentation never prints nan, inf or hundreds of digits: missing figures are "—", huge ones scientific."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

import pytest

from planner.engine.plan import build_plan
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import Hardware, ModelSpec, Pricing, Scenario, TrainingSetup, Workload
from planner.present import fmt
from planner.present.planjson import plan_to_json
from planner.present.report import render_report
from planner.present.textout import render_table

TODAY = dt.date(2026, 12, 1)


@pytest.mark.parametrize("locale", ["en", "es-AR", "es-MX"])
def test_numbers_missing_or_huge_stay_short(locale):
    for x in (float("nan"), float("inf"), -float("inf"), None):
        assert fmt.number(x, locale) == fmt.money(x, "ARS", locale) == fmt.hours(x, locale) == "—"
    assert len(fmt.number(3.84e300, locale)) <= 12
    assert len(fmt.money(4.65e27, "ARS", locale)) <= 16
    assert fmt.number(3.84e17, "es-AR").startswith("3,84")
    assert fmt.number(999_999.5, "en", 0) == "1,000,000"  # ordinary sizes keep their grouping


@pytest.fixture(scope="module")
def extreme_plan():
    """Years of training in a currency at 1e9 per USD, 1e5 runs: products of legal inputs run to 1e27."""
    inputs = load_inputs(include_user_data=False)
    scenario = Scenario(
        name="extreme", model=ModelSpec(name="resnet50"),
        training=TrainingSetup(global_batch=256, precisions=("bf16",)),
        workload=Workload(dataset_samples=10**13, epochs=1e6),
        hardware=Hardware(gpus=("h100-sxm-80gb", "rtx3090-24gb", "rtx4090-24gb"), gpu_counts=(1,)),
        pricing=Pricing(tier="spot", currency="ARS", exchange_rate=1e9, runs=100_000, tax_rate=5.0),
    )
    return scenario, build_plan(scenario, inputs, today=TODAY)


_LONG_NUMBER = re.compile(r"\d[\d,.\u00a0\u202f]{24,}")


def test_the_table_prints_dashes_for_missing_prices_and_short_numbers(extreme_plan):
    scenario, plan = extreme_plan
    assert any(o.cost is not None and o.cost.price is None for o in plan.options), "a GPU without a spot quote"
    text = render_table(plan)
    assert not re.search(r"\b(nan|inf)\b", text)
    assert not _LONG_NUMBER.search(text), _LONG_NUMBER.search(text).group(0)
    assert "—" in text


@pytest.mark.parametrize("fmt_name", ["markdown", "html", "pdf"])
def test_reports_render_extreme_plans_with_short_numbers(extreme_plan, fmt_name):
    scenario, plan = extreme_plan
    out = render_report(plan, scenario, fmt_name, locale="es-AR", today=TODAY)
    if fmt_name == "pdf":
        assert out[:5] == b"%PDF-"
        return
    text = re.sub(r"<svg\b.*?</svg>|data:image/[^\"]+", "", out, flags=re.S)
    assert not re.search(r"\b(nan|inf|NaN)\b", text)
    assert not _LONG_NUMBER.search(text), _LONG_NUMBER.search(text).group(0)


def test_plan_json_has_null_not_nan(extreme_plan):
    _, plan = extreme_plan
    text = plan_to_json(plan)
    assert "NaN" not in text and "Infinity" not in text
    no_price = next(o for o in plan.options if o.cost is not None and o.cost.price is None)
    assert dataclasses.asdict(no_price.cost)["price"] is None
