"""Issue 32 d, first slice: the software stack changes the step time by its factor against plain eager PyTorch —
cited priors (calibration/stack_priors.yaml) refined only by same-source pairs of stacks; a published figure moves
to the plan's stack by the ratio of the two factors and its source says both."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import MappingProxyType

import pytest

from calibration import stack_priors
from planner.engine.step_ladder import step_estimate
from planner.inputs.errors import InputError
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import parse_scenario
from tests.notes_support import detail_en

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus():
    return load_inputs([ROOT / "results" / "published", ROOT / "results" / "traced"], include_user_data=False)


def with_factors(inputs, **factors):
    cal = dataclasses.replace(inputs.calibration, stack_factor=MappingProxyType(factors),
                              stack_basis=MappingProxyType({k: "prior" for k in factors}))
    return dataclasses.replace(inputs, calibration=cal)


def step(inputs, model: dict, gpu: str, batch: int, *, stack: str | None, precision: str = "bf16",
         optimizer: str = "adamw"):
    s = parse_scenario({
        "schema": "trainplan.scenario/1", "name": "stack", "model": model,
        "training": {"global_batch": batch, "micro_batch": batch, "precisions": [precision], "optimizer": optimizer,
                     **({"stack": stack} if stack else {})},
        "workload": {"dataset_samples": 1000, "epochs": 1}, "hardware": {"gpus": [gpu], "gpu_counts": [1]}}, "t")
    return step_estimate(s, inputs, gpu_id=gpu, precision=precision, micro_batch=batch)


def test_a_formula_time_takes_the_plans_stack_factor(corpus):
    """GPT-2 on an A100 by the calibrated formula: torch.compile's factor (0.7 here) makes forward + backward 0.7x
    eager's, in the cited direction, and the source says which factor it took."""
    inputs = with_factors(corpus, torch_compile=0.7)
    eager = step(inputs, {"name": "gpt2"}, "a100-sxm-80gb", 8, stack="pytorch_eager")
    compiled = step(inputs, {"name": "gpt2"}, "a100-sxm-80gb", 8, stack="torch_compile")
    assert eager.source.kind == compiled.source.kind == "analytic"
    assert compiled.micro_step_time_s == pytest.approx(0.7 * eager.micro_step_time_s, rel=0.02)
    assert "× 0.7 for torch_compile against plain eager PyTorch" in detail_en(compiled.source)
    assert "torch_compile" not in detail_en(eager.source)


def test_a_published_figure_moves_to_the_plans_stack_and_says_both(corpus):
    """ResNet-50 on a V100 at 256: NVIDIA's Deep Learning Examples figure (vendor_container) planned for plain eager
    PyTorch is × s[eager] / s[vendor_container]."""
    inputs = with_factors(corpus, vendor_container=0.8)
    as_published = step(inputs, {"name": "resnet50"}, "v100-sxm2-16gb", 256, stack="vendor_container",
                        precision="fp16", optimizer="sgd_momentum")
    eager = step(inputs, {"name": "resnet50"}, "v100-sxm2-16gb", 256, stack="pytorch_eager", precision="fp16",
                 optimizer="sgd_momentum")
    assert as_published.source.kind == eager.source.kind == "published"
    assert eager.micro_step_time_s == pytest.approx(as_published.micro_step_time_s / 0.8, rel=0.02)
    text = detail_en(eager.source)
    assert "timed on vendor_container to pytorch_eager" in text
    assert "vendor_container to" not in detail_en(as_published.source)


def test_without_stack_factors_the_stack_changes_nothing(corpus):
    inputs = with_factors(corpus)
    a = step(inputs, {"name": "gpt2"}, "a100-sxm-80gb", 8, stack="pytorch_eager")
    b = step(inputs, {"name": "gpt2"}, "a100-sxm-80gb", 8, stack="megatron")
    assert a.micro_step_time_s == pytest.approx(b.micro_step_time_s, rel=1e-9)


# ---------------------------------------------------------------- the posterior (calibration/stack_priors.py)

def prior(stack: str, factor: float, sd: float) -> stack_priors.StackPrior:
    return stack_priors.StackPrior(stack, factor, sd, ("test",))


def test_without_pairs_the_factor_is_the_prior():
    factors, basis = stack_priors.posterior({"torch_compile": prior("torch_compile", 0.66, 0.25)}, [])
    assert factors == {"torch_compile": pytest.approx(0.66)}
    assert basis == {"torch_compile": "prior"}


def test_a_pair_pulls_the_factor_towards_what_one_source_measured():
    """A source timing eager at 250 ms and compiled at 135 ms (nanoGPT's README figures): log ratio -0.616. With a
    prior of 0.66 at sd 0.25 and a pair sd of 0.1, the posterior is the precision-weighted mean in log space."""
    pair = stack_priors.Pair("torch_compile", "pytorch_eager", math.log(135 / 250), "nanoGPT")
    factors, basis = stack_priors.posterior({"torch_compile": prior("torch_compile", 0.66, 0.25)}, [pair])
    w0, w1 = 1 / 0.25 ** 2, 1 / 0.1 ** 2
    expected = math.exp((w0 * math.log(0.66) + w1 * math.log(135 / 250)) / (w0 + w1))
    assert factors["torch_compile"] == pytest.approx(expected, rel=1e-9)
    assert basis["torch_compile"] == "prior + 1 pair"


def test_a_pair_between_two_non_reference_stacks_ties_them():
    """llm.c (hand_fused) 78 ms against torch.compile's 80 ms on one A100: the pair moves their ratio, not eager."""
    priors = {"torch_compile": prior("torch_compile", 0.66, 0.05), "hand_fused": prior("hand_fused", 0.5, 1.0)}
    pair = stack_priors.Pair("hand_fused", "torch_compile", math.log(78 / 80), "llm.c")
    factors, _ = stack_priors.posterior(priors, [pair])
    assert factors["hand_fused"] / factors["torch_compile"] == pytest.approx(78 / 80, rel=0.05)


def test_the_priors_file_names_what_is_wrong(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("schema: trainplan.stack-priors/1\nstacks:\n  turbo_mode: {factor: 0.5, log_sd: 0.2, "
                   "evidence: [x]}\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        stack_priors.load_priors(bad)
    assert "turbo_mode" in str(err.value)
    bad.write_text("schema: trainplan.stack-priors/1\nstacks:\n  torch_compile: {factor: 0.5, log_sd: 0.2, "
                   "evidence: []}\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        stack_priors.load_priors(bad)
    assert "evidence" in str(err.value)


def test_the_shipped_priors_cite_every_stack():
    priors = stack_priors.load_priors()
    from planner.vocab import SOFTWARE_STACKS
    assert set(priors) == set(SOFTWARE_STACKS)
    assert all(p.evidence for p in priors.values())
