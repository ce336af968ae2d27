"""Scenario defaults have one owner, the dataclasses: the parser and the app's widgets both read them."""

from __future__ import annotations

import pytest

from planner.inputs.scenario import (
    Adapter,
    Hardware,
    OnPrem,
    Pricing,
    Scenario,
    SpotSettings,
    TrainingSetup,
    Workload,
    defaults_of,
    parse_scenario,
    scenario_to_dict,
)
from ui import state

MINIMAL = {"schema": "trainplan.scenario/1", "model": {"name": "resnet50"},
           "training": {"global_batch": 64}, "workload": {"dataset_samples": 1000, "epochs": 1}}


def test_a_minimal_scenario_parses_to_the_dataclass_defaults():
    s = parse_scenario(MINIMAL)
    assert s.training == TrainingSetup(global_batch=64)
    assert s.workload == Workload(dataset_samples=1000, epochs=1.0)
    assert (s.hardware, s.pricing, s.name, s.locale) == (Hardware(), Pricing(), Scenario.name, Scenario.locale)


# (dataclass, field, a different valid value, where the parsed scenario keeps it, widget key or None)
CHANGES = [
    (TrainingSetup, "optimizer", "sgd", lambda s: s.training.optimizer, "optimizer"),
    (TrainingSetup, "sharding", "zero1", lambda s: s.training.sharding, "sharding"),
    (TrainingSetup, "frozen_fraction", 0.25, lambda s: s.training.frozen_fraction, "frozen_fraction"),
    (Workload, "eval_overhead", 0.3, lambda s: s.workload.eval_overhead, "eval_overhead"),
    (Hardware, "gpus_per_node", 4, lambda s: s.hardware.gpus_per_node, "gpus_per_node"),
    (Hardware, "cpu_workers_per_gpu", 3, lambda s: s.hardware.cpu_workers_per_gpu, "cpu_workers_per_gpu"),
    (Pricing, "tier", "spot", lambda s: s.pricing.tier, "tier"),
    (Pricing, "failure_overhead", 0.2, lambda s: s.pricing.failure_overhead, "failure_overhead"),
    (SpotSettings, "restart_min", 7.0, lambda s: s.pricing.spot.restart_min, "spot_restart"),
    (OnPrem, "pue", 1.2, lambda s: s.pricing.on_prem.pue, "onprem_pue"),
    (Adapter, "rank", 8, lambda s: s.training.adapter.rank, "adapter_rank"),
]


@pytest.mark.parametrize("cls,name,value,read,widget", CHANGES, ids=[f"{c[0].__name__}.{c[1]}" for c in CHANGES])
def test_changing_a_dataclass_default_moves_the_parser_and_the_widgets(monkeypatch, cls, name, value, read, widget):
    field = cls.__dataclass_fields__[name]
    monkeypatch.setattr(field, "default", value)
    assert defaults_of(cls)[name] == value
    data = MINIMAL  # no hardware/pricing section: absent sections take the dataclass defaults too
    if cls is Adapter:
        data = {**MINIMAL, "training": {"global_batch": 64, "adapter": {"kind": "lora"}}}
    assert read(parse_scenario(data)) == value
    widgets = state.to_widgets({k: v for k, v in MINIMAL.items() if k != "schema"})
    assert widgets[widget] == value


def test_the_scenario_dict_round_trips_through_the_widgets():
    s = parse_scenario(MINIMAL)
    d = scenario_to_dict(s)
    back = state.from_widgets(d, state.to_widgets(d))
    assert parse_scenario(back) == s


def test_a_loaded_models_family_stays_with_that_model_only():
    """A scenario's model.family has no widget: kept while its model is chosen, dropped when another one is."""
    data = {**MINIMAL, "model": {"name": "my_bert", "family": "encoder", "params": 109484547,
                                 "transformer": {"layers": 12, "hidden": 768, "heads": 12, "seq_len": 128,
                                                 "vocab": 30522}}}
    d = scenario_to_dict(parse_scenario(data))
    widgets = state.to_widgets(d)
    assert state.from_widgets(d, widgets)["model"]["family"] == "encoder"
    other = state.from_widgets(d, {**widgets, "model_name": "gpt2"})
    assert "family" not in other["model"]
