"""Issue 38, counts instead of clocks: a plan from an empty memo works each micro-step out once per (GPU, precision,
micro-batch), and a source GPU's side of a transfer once per (source GPU, precision, micro-batch), however many
options, rentals, dominance bounds and target GPUs ask for them (clocks stay in perf/plan_speed.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from planner.engine import memo, step_ladder, step_transfer
from planner.engine.plan import build_plan
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import load_scenario_file

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(include_user_data=False)


@pytest.mark.parametrize("name", ["resnet50-imagenet.yaml", "llama7b-full-finetune.yaml"])
def test_each_micro_step_and_transfer_source_is_worked_out_once(inputs, monkeypatch, name):
    micro_steps: Counter[tuple[str, str, int | None]] = Counter()
    sources: Counter[tuple[str, str, int]] = Counter()
    micro_step, work_out_source = step_ladder._micro_step, step_transfer._work_out_source

    def counted_micro_step(ctx, option):
        micro_steps[(option.gpu.id, option.precision, option.micro_batch)] += 1
        return micro_step(ctx, option)

    def counted_source(ctx, other, precision, micro_batch):
        sources[(other.id, precision, micro_batch)] += 1
        return work_out_source(ctx, other, precision, micro_batch)

    monkeypatch.setattr(step_ladder, "_micro_step", counted_micro_step)
    monkeypatch.setattr(step_transfer, "_work_out_source", counted_source)
    memo.clear()
    plan = build_plan(load_scenario_file(ROOT / "scenarios" / name, list(inputs.profiles)), inputs)
    assert plan.options and micro_steps  # the counts can fail: the plan timed something
    assert max(micro_steps.values()) == 1, micro_steps.most_common(3)
    assert not sources or max(sources.values()) == 1, sources.most_common(3)
