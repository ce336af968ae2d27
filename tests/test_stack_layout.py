"""Issue 33, sharding as it runs: a scenario that names no training.state_layout plans with the layout its stack
ships where the stack fixes one (planner.vocab.STACK_STATE_LAYOUTS: DeepSpeed's fp32 master + moments, Megatron's
fp32 main parameters and gradients), and torch_amp (fp32 sharded parameters, gradients and AdamW moments: PyTorch
FSDP, Accelerate, LitGPT's bf16-mixed default) for every other stack. A layout the file gives is kept."""

from __future__ import annotations

import pytest

from planner.engine.memory import model_state_bytes
from planner.inputs.scenario import parse_scenario, scenario_to_dict
from planner.vocab import SOFTWARE_STACKS, STACK_STATE_LAYOUTS, stack_state_layout

GIB = 2**30


def training(**fields):
    return parse_scenario({
        "schema": "trainplan.scenario/1", "name": "layout", "model": {"name": "gpt2"},
        "training": {"global_batch": 64, **fields}, "workload": {"dataset_samples": 1000, "epochs": 1},
        "hardware": {"gpus": ["a100-sxm-80gb"], "gpu_counts": [8]}}, "layout.yaml").training


@pytest.mark.parametrize(("stack", "sharding", "layout"), [
    ("deepspeed", "zero3", "deepspeed"), ("deepspeed", "zero2", "deepspeed"), ("deepspeed", "zero1", "zero_paper"),
    ("deepspeed", "none", "zero_paper"), ("megatron", "none", "megatron"), ("megatron", "zero1", "megatron"),
    ("megatron", "zero3", "torch_amp")])
def test_a_stack_that_fixes_its_layout_sets_the_default(stack, sharding, layout):
    assert training(stack=stack, sharding=sharding).state_layout == layout


@pytest.mark.parametrize("stack", [s for s in SOFTWARE_STACKS if s not in STACK_STATE_LAYOUTS])
def test_every_other_stack_keeps_fp32_states(stack):
    # FSDP keeps the sharded parameters in full precision for the optimizer step; llm_recipe holds both torchtune's
    # pure bf16 and LitGPT's bf16-mixed default, so it cannot say which: torch_amp until the file says pure_bf16.
    for sharding in ("none", "zero3"):
        assert training(stack=stack, sharding=sharding).state_layout == "torch_amp"
    assert training().state_layout == "torch_amp"  # no stack: the family's default stack, torch_amp


def test_a_given_layout_is_kept_and_round_trips():
    t = training(stack="deepspeed", sharding="zero3", state_layout="torch_amp")
    assert t.state_layout == "torch_amp"
    again = parse_scenario(scenario_to_dict(parse_scenario({
        "schema": "trainplan.scenario/1", "name": "x", "model": {"name": "gpt2"},
        "training": {"global_batch": 64, "stack": "megatron"}, "workload": {"dataset_samples": 1000, "epochs": 1},
        "hardware": {"gpus": ["a100-sxm-80gb"], "gpu_counts": [8]}}, "x")), "again")
    assert again.training.state_layout == "megatron"
    assert stack_state_layout(None, "zero3") == "torch_amp"


def test_megatron_by_default_plans_its_18_bytes_per_bf16_parameter():
    """Megatron-LM's bf16 distributed optimizer (docs/methods.md#memory): 2 + 4 + 12 = 18 B/param before sharding,
    against torch_amp's 16; a 7e9-parameter model on one GPU holds 2 x 7e9 bytes more."""
    t = training(stack="megatron")
    params = 7_000_000_000
    mega = model_state_bytes(params, params, optimizer="adamw", state_layout=t.state_layout, precision="bf16")
    amp = model_state_bytes(params, params, optimizer="adamw", state_layout="torch_amp", precision="bf16")
    assert (mega.weights + mega.grads + mega.optimizer) == pytest.approx(18 * params)
    assert (amp.weights + amp.grads + amp.optimizer) == pytest.approx(16 * params)
