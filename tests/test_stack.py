"""training.stack (issue 32 b): the software stack a plan is made for, read from the scenario or defaulted by model
family, carried by the plan with what its step time implies per GPU (tokens or samples/s and MFU)."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest

from planner.engine.plan import build_plan
from planner.engine.stack import planned_stack
from planner.engine.throughput import option_throughput
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import field_default, load_scenario_file, parse_scenario, scenario_to_dict
from planner.present.planjson import plan_to_dict
from planner.present.viewmodel import planned_for_sentence
from planner.vocab import DEFAULT_STACKS, MODEL_FAMILIES, SOFTWARE_STACKS
from ui import state

ROOT = Path(__file__).resolve().parent.parent

BASE = {"schema": "trainplan.scenario/1", "model": {"name": "gpt2"},
        "training": {"global_batch": 64, "precisions": ["bf16"]},
        "workload": {"dataset_samples": 6400, "epochs": 1},
        "hardware": {"gpus": ["a100-sxm-80gb", "h100-sxm-80gb"], "gpu_counts": [1, 2]}}


@pytest.fixture(scope="module")
def inputs():
    return load_inputs()


def _scenario(**training):
    d = copy.deepcopy(BASE)
    d["training"].update(training)
    return parse_scenario(d, "s.yaml")


def test_absent_the_scenario_names_no_stack_and_the_family_decides():
    assert field_default("training.stack") is None
    assert _scenario().training.stack is None
    assert set(DEFAULT_STACKS) == set(MODEL_FAMILIES) and set(DEFAULT_STACKS.values()) <= set(SOFTWARE_STACKS)
    for family in MODEL_FAMILIES:
        assert planned_stack(None, family).stack == DEFAULT_STACKS[family] and planned_stack(None, family).defaulted
    assert planned_stack("deepspeed", "cnn") == planned_stack("deepspeed", "decoder")
    assert not planned_stack("deepspeed", "cnn").defaulted


@pytest.mark.parametrize("stack", SOFTWARE_STACKS)
def test_every_stack_reads_and_round_trips(stack):
    s = _scenario(stack=stack)
    assert s.training.stack == stack
    assert parse_scenario(scenario_to_dict(s), "again.yaml") == s


def test_the_sidebar_offers_auto_and_every_stack_and_converts_both_ways():
    assert state.STACK_CHOICES == (state.AUTO_STACK, *SOFTWARE_STACKS)
    for given, widget in ((None, state.AUTO_STACK), ("llm_recipe", "llm_recipe")):
        d = scenario_to_dict(_scenario(**({"stack": given} if given else {})))
        w = state.to_widgets(d)
        assert w["stack"] == widget
        assert state.from_widgets(d, w)["training"].get("stack") == given


def test_the_plan_says_its_stack_and_whether_it_was_defaulted(inputs):
    plan = build_plan(_scenario(), inputs)
    assert (plan.stack, plan.stack_defaulted) == (DEFAULT_STACKS["decoder"], True)
    plan = build_plan(_scenario(stack="torch_compile"), inputs)
    assert (plan.stack, plan.stack_defaulted) == ("torch_compile", False)


def test_the_stack_changes_the_planned_time_in_the_cited_direction(inputs):
    """Issue 32 d: a hand-fused trainer (llm.c class) is faster than the decoder default (Hugging Face Trainer with
    SDPA), DeepSpeed's engine no faster: by the factors of planner/inputs/step_calibration.json (cited priors in
    calibration/stack_priors.yaml, refined by the corpus's same-source pairs)."""
    cal = inputs.calibration
    hf, fused, ds = (build_plan(_scenario(**({"stack": s} if s else {})), inputs)
                     for s in (None, "hand_fused", "deepspeed"))
    assert cal.stack_factor["hand_fused"] < cal.stack_factor.get("hf_trainer_sdpa", 1.0) <= cal.stack_factor["deepspeed"]
    for a, b, c in zip(hf.options, fused.options, ds.options, strict=True):
        if a.step is None:
            continue
        assert b.step.micro_step_time_s < a.step.micro_step_time_s <= c.step.micro_step_time_s, a.id


def test_throughput_and_mfu_follow_from_the_step_time_flops_and_peak():
    # 8 GPUs at 400 samples/s in all: 50 samples/s each; 1e12 model FLOPs a sample: 50 TFLOP/s against 312 peak
    t = option_throughput(400.0, 8, model_flops_per_sample=1e12, tokens_per_sample=2048.0, peak_tflops=312.0)
    assert t.samples_per_s_per_gpu == pytest.approx(50.0)
    assert t.tokens_per_s_per_gpu == pytest.approx(102_400.0)
    assert t.model_tflops_per_s_per_gpu == pytest.approx(50.0)
    assert t.mfu == pytest.approx(50.0 / 312.0)
    unknown = option_throughput(400.0, 8, model_flops_per_sample=None, tokens_per_sample=None, peak_tflops=312.0)
    assert unknown.mfu is None and unknown.tokens_per_s_per_gpu is None


def test_each_option_s_mfu_is_its_flops_over_its_step_time_and_the_gpu_peak(inputs):
    """GPT-2 124M: the plan's own FLOPs per sample x global batch / step time / GPUs / dense bf16 peak."""
    plan = build_plan(_scenario(), inputs)
    flops = plan.model.flops_per_sample
    assert flops and plan.model.seq_len == 1024
    timed = [o for o in plan.options if o.step is not None]
    assert len(timed) == 4
    for o in timed:
        peak = inputs.profiles[o.gpu_id].peak_tflops["bf16"]
        expected = flops * 64 / o.step.step_time_s / o.n_gpus / (peak * 1e12)
        assert o.throughput.mfu == pytest.approx(expected, rel=1e-9), o.id
        assert o.throughput.tokens_per_s_per_gpu == pytest.approx(64 * 1024 / o.step.step_time_s / o.n_gpus)
        assert 0 < o.throughput.mfu < 1, o.id


def test_frozen_weights_and_recompute_are_not_model_flops(inputs):
    """MFU counts the model's FLOPs (PaLM App. B): checkpointing's recompute adds time, not model FLOPs; a LoRA
    step computes no weight gradients for the frozen base (backward 1 + f_T forward units, not 2)."""
    plain = build_plan(_scenario(), inputs).options[0]
    recompute = build_plan(_scenario(activation_checkpointing=True), inputs).options[0]
    assert recompute.throughput.model_tflops_per_s_per_gpu == pytest.approx(
        plain.throughput.model_tflops_per_s_per_gpu * plain.step.step_time_s / recompute.step.step_time_s)
    lora = build_plan(_scenario(adapter={"kind": "lora", "rank": 8}), inputs)
    o = lora.options[0]
    per_sample = o.throughput.model_tflops_per_s_per_gpu * 1e12 / o.throughput.samples_per_s_per_gpu
    assert per_sample < 0.75 * lora.model.flops_per_sample


def test_a_vision_model_counts_samples_not_tokens(inputs):
    d = copy.deepcopy(BASE)
    d["model"] = {"name": "resnet50"}
    plan = build_plan(parse_scenario(d, "r.yaml"), inputs)
    o = next(o for o in plan.options if o.step is not None)
    assert o.throughput.tokens_per_s_per_gpu is None
    assert o.throughput.samples_per_s_per_gpu == pytest.approx(o.step.samples_per_s / o.n_gpus)


def test_the_default_is_what_the_users_run_per_family(inputs):
    """docs/methods.md#software-stack: eager loops for vision and small models (the seed articles, bench itself);
    Hugging Face Trainer/PEFT with transformers' default SDPA attention for the Hub's encoders and decoders."""
    assert {f for f, s in DEFAULT_STACKS.items() if s == "hf_trainer_sdpa"} == {"encoder", "decoder"}
    assert {f for f, s in DEFAULT_STACKS.items() if s == "pytorch_eager"} == {"cnn", "vit", "rnn", "mlp", "custom"}
    gpt2 = build_plan(load_scenario_file(ROOT / "scenarios" / "gpt2-124m-10b-tokens.yaml"), inputs)
    assert (gpt2.stack, gpt2.stack_defaulted) == ("torch_compile", False)  # nanoGPT's own setting


def test_the_plan_json_carries_the_stack_and_each_option_s_rate_and_mfu(inputs):
    plan = build_plan(_scenario(), inputs)
    d = plan_to_dict(plan)
    assert (d["stack"], d["stack_defaulted"]) == ("hf_trainer_sdpa", True)
    for o, row in zip(plan.options, d["options"], strict=True):
        tp = row["throughput_per_gpu"]
        # every figure follows from the option's own step time, the model's FLOPs and the GPU's bf16 peak
        flops_per_s = plan.model.flops_per_sample * 64 / row["step_time_s"] / o.n_gpus
        assert tp["model_tflops_per_s"] == pytest.approx(flops_per_s / 1e12, rel=1e-3)
        assert tp["mfu"] == pytest.approx(flops_per_s / (tp["peak_tflops"] * 1e12), rel=2e-3)
        assert tp["tokens_per_s"] == pytest.approx(64 * 1024 / row["step_time_s"] / o.n_gpus, rel=1e-3)
        assert tp["peak_tflops"] == inputs.profiles[o.gpu_id].peak_tflops["bf16"]


def test_a_family_outside_the_vocabulary_is_planned_and_said_as_a_custom_model(inputs):
    """A result file may name any family: the default and the sentence are a custom model's, never a KeyError."""
    plan = build_plan(_scenario(), inputs)
    odd = dataclasses.replace(plan, model=dataclasses.replace(plan.model, family="diffusion"))
    assert planned_stack(None, "diffusion").stack == DEFAULT_STACKS["custom"]
    assert "(custom model)" in planned_for_sentence(odd, "en")
    assert "(modelo propio)" in planned_for_sentence(odd, "es")
