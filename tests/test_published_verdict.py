"""Published memory outcomes decide a plan's verdict when the configuration matches exactly (issue 16): LitGPT's
LoRA table for Llama 2 7B on an A100-SXM4-40GB (lit-gpt 8641822, tutorials/resource-tables.md L53-L57: micro-batch
1 ran at 21.30 GB, 2 at 29.07 GB, 4 ran out of memory; bf16-true, LoRA r8 on query+value, sequences up to 1,304
tokens, no checkpointing)."""

from __future__ import annotations

import datetime as dt

import pytest

from planner.engine.plan import build_plan
from planner.engine.published_memory import same_adapter
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import Adapter, parse_scenario
from planner.present.planjson import plan_to_dict
from tests.notes_support import english

TODAY = dt.date(2026, 12, 2)


def _scenario(micro: int, **adapter) -> dict:
    return {
        "schema": "trainplan.scenario/1", "name": "LitGPT LoRA table",
        "model": {"name": "llama2_7b", "transformer": {"layers": 32, "hidden": 4096, "heads": 32, "seq_len": 1304,
                                                       "vocab": 32000, "mlp": "swiglu", "ffn": 11008}},
        "training": {"precisions": ["bf16"], "global_batch": 128, "micro_batch": micro,
                     "adapter": {"kind": "lora", "rank": 8, "targets": "qv", **adapter}},
        "workload": {"dataset_samples": 52002, "epochs": 1},
        "hardware": {"gpus": ["a100-sxm-40gb"], "gpu_counts": [1]},
    }


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(include_user_data=False)


def _option(inputs, micro: int, **adapter):
    plan = build_plan(parse_scenario(_scenario(micro, **adapter)), inputs, today=TODAY)
    (o,) = plan.options
    return plan, o


def test_a_published_run_that_ran_says_fits_with_its_figure(inputs):
    plan, o = _option(inputs, 2)
    assert o.fits is True and o.memory.published_outcome == "ran"
    assert o.memory.published_figure == pytest.approx(29.07e9)
    text = english(o.notes[0])
    assert "exactly this configuration ran on this GPU" in text and "litgpt" in text.lower() and "27.1 GiB" in text
    row = next(r for r in plan_to_dict(plan)["options"] if r["id"] == o.id)
    assert row["memory_published"] == {"outcome": "ran", "source": o.memory.published_label, "peak_gib": 27.07,
                                       "counter": "max_memory_allocated"}


def test_a_published_out_of_memory_says_does_not_fit(inputs):
    _, o = _option(inputs, 4)
    assert o.fits is False and o.memory.published_outcome == "oom"
    assert any("ran out of memory on this GPU" in english(n) for n in o.notes)


def test_a_different_configuration_is_never_matched(inputs):
    _, rank16 = _option(inputs, 4, rank=16)   # another rank: the model decides
    _, targets = _option(inputs, 4, targets="all_linear")  # other adapted matrices
    assert rank16.memory.published_outcome is None and targets.memory.published_outcome is None


def test_adapters_match_by_kind_rank_and_targets():
    lora = Adapter(kind="lora", rank=8, targets="qv")
    assert same_adapter({"kind": "lora", "rank": 8, "targets": "query+value"}, lora)
    assert not same_adapter({"kind": "qlora", "rank": 8, "targets": "query+value"}, lora)
    assert not same_adapter({"kind": "lora", "rank": 8, "targets": "mlp"}, lora)
    assert same_adapter(None, None) and not same_adapter(None, lora)


def test_a_status_only_row_that_ran_decides_the_fit(inputs):
    """Issue 33: ResNet-50 at micro-batch 512 in fp16 on an RTX 3090 was "does not fit: needs 24.7 GiB" although the
    corpus holds exactly that run with status ok and no memory figure (timm benchmark-train-amp-nchw-pt112-cu113-
    rtx3090.csv, huggingface/pytorch-image-models@aa4b585, resnet50 at train batch 512)."""
    scenario = {"schema": "trainplan.scenario/1", "name": "timm status row",
                "model": {"name": "resnet50"},
                "training": {"precisions": ["fp16"], "global_batch": 512, "micro_batch": 512,
                             "optimizer": "sgd_momentum"},
                "workload": {"dataset_samples": 1281167, "epochs": 1},
                "hardware": {"gpus": ["rtx3090-24gb"], "gpu_counts": [1]}}
    plan = build_plan(parse_scenario(scenario), inputs, today=TODAY)
    (o,) = plan.options
    assert o.memory.total > o.memory.capacity, "the model alone says it does not fit: the row must decide"
    assert o.fits is True and o.memory.published_outcome == "ran" and o.memory.published_figure is None
    text = english(o.notes[0])
    assert "ran on this GPU" in text and "no memory figure published" in text and "pytorch-image-models" in text
    row = next(r for r in plan_to_dict(plan)["options"] if r["id"] == o.id)
    assert row["memory_published"]["outcome"] == "ran" and row["memory_published"]["peak_gib"] is None
    assert o.step is not None and o.cost is not None, "a fitting option is timed and priced"


def test_a_status_row_at_another_micro_batch_decides_nothing(inputs):
    scenario = {"schema": "trainplan.scenario/1", "name": "timm status row",
                "model": {"name": "resnet50"},
                "training": {"precisions": ["fp16"], "global_batch": 1024, "micro_batch": 1024},
                "workload": {"dataset_samples": 1281167, "epochs": 1},
                "hardware": {"gpus": ["rtx3090-24gb"], "gpu_counts": [1]}}
    (o,) = build_plan(parse_scenario(scenario), inputs, today=TODAY).options
    assert o.memory.published_outcome is None and o.fits is False
