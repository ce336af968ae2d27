"""planner/engine/memo.py: a plan built through a warm memo equals the plan built from an empty one, for what-ifs
that change what the memo keeps (memory search, step times, rentals) and what it does not (workload, deadline)."""

from __future__ import annotations

import datetime as dt
import gc
from dataclasses import replace
from pathlib import Path

import pytest

from planner.engine import memo
from planner.engine.plan import build_plan
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import Scenario, load_scenario_file

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml")) + sorted((ROOT / "scenarios" / "presets").glob("*.yaml"))
DAY = dt.date(2026, 12, 1)


@pytest.fixture(scope="module")
def inputs():
    return load_inputs()


def what_ifs(s: Scenario) -> list[tuple[str, Scenario]]:
    """One knob at a time, as the sidebar changes them; each reads a different part of the memo's keys."""
    t, w, h, p, c = s.training, s.workload, s.hardware, s.pricing, s.constraints
    micro = 1 if t.micro_batch != 1 else 2
    return [
        ("as shipped", s),
        ("eval overhead", replace(s, workload=replace(w, eval_overhead=w.eval_overhead + 0.1))),
        ("spot", replace(s, pricing=replace(p, tier="spot" if p.tier != "spot" else "on_demand"))),
        ("deadline", replace(s, constraints=replace(c, deadline_hours=5.0))),
        ("micro-batch", replace(s, training=replace(t, micro_batch=micro))),
        ("checkpointing", replace(s, training=replace(t, activation_checkpointing=not t.activation_checkpointing))),
        ("workspace", replace(s, hardware=replace(h, workspace_gib=3.0))),
        ("input workers", replace(s, hardware=replace(h, cpu_workers_per_gpu=1))),
        ("gpus per node", replace(s, hardware=replace(h, gpus_per_node=2))),
        ("global batch", replace(s, training=replace(t, global_batch=t.global_batch * 2))),
        ("optimizer", replace(s, training=replace(t, optimizer="sgd" if t.optimizer != "sgd" else "adamw"))),
    ]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_a_warm_memo_plans_as_an_empty_one(inputs, path):
    base = load_scenario_file(path, list(inputs.profiles))
    memo.clear()
    warm = [(name, build_plan(s, inputs, today=DAY)) for name, s in what_ifs(base)]  # each reuses the last ones
    assert memo.size(inputs) > 0
    for (name, s), (_, got) in zip(what_ifs(base), warm, strict=True):
        memo.clear()
        cold = build_plan(s, inputs, today=DAY)
        # repr: an unpriced option's cost is nan, which is never == itself
        assert repr(got) == repr(cold), f"{path.name}, {name}: the plan through a warm memo differs from a fresh one"


def test_a_changed_knob_changes_the_plan(inputs):
    """The comparison above can fail: the what-ifs do move the numbers the memo keeps."""
    base = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml", list(inputs.profiles))  # input-bound
    plans = {name: build_plan(s, inputs, today=DAY) for name, s in what_ifs(base)}
    shipped = plans["as shipped"]
    for name in ("micro-batch", "input workers", "workspace", "global batch"):
        assert repr(plans[name].options) != repr(shipped.options), name


def test_the_memo_goes_with_its_inputs():
    inputs = load_inputs()
    base = load_scenario_file(SCENARIOS[0], list(inputs.profiles))
    build_plan(base, inputs, today=DAY)
    key = id(inputs)
    assert memo.size(inputs) > 0
    del inputs
    gc.collect()
    assert key not in memo._memos


def test_the_memo_is_bounded(inputs, monkeypatch):
    monkeypatch.setattr(memo, "MAX_ENTRIES", 10)
    memo.clear()
    base = load_scenario_file(SCENARIOS[0], list(inputs.profiles))
    build_plan(base, inputs, today=DAY)
    assert memo.size(inputs) == 10
