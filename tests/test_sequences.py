"""Variable-length text (issue 18): packed examples count as full sequences, unpacked ones pay for their padding,
and a sequence-classification head has no vocabulary logits."""

from __future__ import annotations

import dataclasses

import pytest

from planner.engine import sequences
from planner.engine.models import transformer_flops_per_sample, transformer_params
from planner.engine.plan import build_plan
from planner.inputs.errors import InputError
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import TransformerShape, parse_scenario
from tests.notes_support import detail_en

LLAMA2_7B = TransformerShape(layers=32, hidden=4096, heads=32, seq_len=2048, vocab=32000, mlp="swiglu", ffn=11008)
BERT_BASE = TransformerShape(layers=12, hidden=768, heads=12, seq_len=128, vocab=30522, mlp="gelu")


def test_packed_sequences_fill_full_rows():
    # 52,002 Alpaca examples of 300 tokens fill ceil(52,002 x 300 / 2,048) = 7,618 rows of 2,048 tokens
    assert sequences.packed_sequences(52002, mean_tokens=300, seq_len=2048) == 7618
    assert sequences.packed_sequences(4, mean_tokens=512, seq_len=2048) == 1  # exact: no extra row
    with pytest.raises(ValueError):
        sequences.packed_sequences(0, mean_tokens=300, seq_len=2048)


def test_padding_waste_and_time_factor():
    assert sequences.padding_waste_fraction(300, 2048) == pytest.approx(1 - 300 / 2048)
    assert sequences.padding_waste_fraction(300, 300) == 0.0
    params = 6_738_415_616
    f = sequences.padded_time_factor(params, LLAMA2_7B, padded_tokens=1024)
    # FLOPs ratio (6N + 12·L·h·s)·s: below the token ratio 0.5 because attention's quadratic part shrinks faster
    expected = ((6 * params + 12 * 32 * 4096 * 1024) * 1024) / ((6 * params + 12 * 32 * 4096 * 2048) * 2048)
    assert f == pytest.approx(expected) and f < 0.5
    assert sequences.padded_time_factor(params, LLAMA2_7B, padded_tokens=2048) == pytest.approx(1.0)


def test_sequence_classification_drops_the_vocabulary_logits():
    """BERT-base on MNLI has no masked-LM head: 6·(N − V·h) per token, 27% fewer FLOPs than the MLM model."""
    params = 109_484_547
    mlm = transformer_flops_per_sample(params, BERT_BASE)
    cls = transformer_flops_per_sample(params, dataclasses.replace(BERT_BASE, loss="sequence"))
    attention = 12 * 12 * 768 * 128 * 128
    assert cls == pytest.approx(6 * (params - 30522 * 768) * 128 + attention)
    assert mlm / cls == pytest.approx(1.27, abs=0.01)
    # an image transformer has no token table: nothing to drop
    vit = TransformerShape(layers=12, hidden=768, heads=12, seq_len=197, vocab=0, loss="sequence")
    assert transformer_flops_per_sample(transformer_params(vit), vit) == pytest.approx(
        transformer_flops_per_sample(transformer_params(vit), dataclasses.replace(vit, loss="standard")))


def _qlora(**workload) -> dict:
    return {
        "schema": "trainplan.scenario/1", "name": "7B QLoRA on Alpaca",
        "model": {"name": "llama2_7b", "transformer": {"layers": 32, "hidden": 4096, "heads": 32, "seq_len": 2048,
                                                       "vocab": 32000, "mlp": "swiglu", "ffn": 11008}},
        "training": {"precisions": ["bf16"], "optimizer": "adamw", "global_batch": 16, "micro_batch": 4,
                     "activation_checkpointing": True,
                     "adapter": {"kind": "qlora", "rank": 16, "targets": "all_linear", "base_dtype": "nf4"}},
        "workload": {"dataset_samples": 52002, "epochs": 3, **workload},
        "hardware": {"gpus": ["rtx4090-24gb"], "gpu_counts": [1]},
    }


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(include_user_data=False)


def _plan(inputs, **workload):
    plan = build_plan(parse_scenario(_qlora(**workload)), inputs)
    (option,) = plan.options
    return plan, option


def test_packing_divides_the_steps_and_keeps_the_step_time(inputs):
    _, full = _plan(inputs)
    plan, packed = _plan(inputs, mean_tokens_per_sample=300, packing=True)
    assert full.convergence.steps == -(-3 * 52002 // 16)  # every example a 2,048-token row
    assert packed.convergence.steps == -(-3 * 7618 // 16)
    assert packed.step.step_time_s == pytest.approx(full.step.step_time_s)
    assert packed.cost.hours < 0.2 * full.cost.hours
    assert any(getattr(n, "key", None) == "packing_rows" for n in plan.assumptions)


def test_padding_costs_compute_but_not_steps(inputs):
    _, full = _plan(inputs)
    plan, to_max = _plan(inputs, mean_tokens_per_sample=300)
    _, to_600 = _plan(inputs, mean_tokens_per_sample=300, padded_tokens_per_sample=600)
    assert to_max.convergence.steps == full.convergence.steps == to_600.convergence.steps
    assert to_max.step.step_time_s == pytest.approx(full.step.step_time_s)  # padded to 2,048: nothing saved
    waste = next(n for n in plan.assumptions if getattr(n, "key", None) == "padding_to_max")
    assert dict(waste.items)["pct"] == 85
    factor = sequences.padded_time_factor(plan.model.params, LLAMA2_7B, padded_tokens=600)
    # the tokens-dependent part shrinks by the FLOPs ratio; QLoRA's dequantisation and the optimizer do not
    assert factor * full.step.step_time_s < to_600.step.step_time_s < 0.5 * full.step.step_time_s
    assert "padded below the sequence length" in detail_en(to_600.step.source)


def test_tokens_workload_counts_real_tokens_per_row(inputs):
    s = _qlora()
    s["workload"] = {"tokens": 52002 * 300, "mean_tokens_per_sample": 300}
    (unpacked,) = build_plan(parse_scenario(s), inputs).options
    s["workload"]["packing"] = True
    (packed,) = build_plan(parse_scenario(s), inputs).options
    assert unpacked.convergence.steps == -(-52002 * 300 // (16 * 300))  # one example per row
    assert packed.convergence.steps == -(-52002 * 300 // (16 * 2048))


@pytest.mark.parametrize(("workload", "field", "words"), [
    ({"mean_tokens_per_sample": 3000}, "workload.mean_tokens_per_sample", "at most the model's sequence length 2,048"),
    ({"mean_tokens_per_sample": 300, "padded_tokens_per_sample": 4096}, "workload.padded_tokens_per_sample",
     "got 4096.0; expected at most the model's sequence length 2,048"),
])
def test_token_fields_that_contradict_the_model_are_refused(inputs, workload, field, words):
    with pytest.raises(InputError) as e:
        build_plan(parse_scenario(_qlora(**workload)), inputs)
    assert e.value.field == field and words in str(e.value)


@pytest.mark.parametrize(("workload", "field", "words"), [
    ({"packing": True}, "workload.packing", "mean_tokens_per_sample too"),
    ({"padded_tokens_per_sample": 600}, "workload.padded_tokens_per_sample", "mean_tokens_per_sample too"),
    ({"mean_tokens_per_sample": 300, "packing": True, "padded_tokens_per_sample": 600},
     "workload.padded_tokens_per_sample", "no padded length with packing"),
    ({"mean_tokens_per_sample": 300, "padded_tokens_per_sample": 200}, "workload.padded_tokens_per_sample",
     "at least the mean"),
    ({"mean_tokens_per_sample": -5}, "workload.mean_tokens_per_sample", ""),
    ({"mean_tokens_per_sample": 300, "packing": "yes"}, "workload.packing", "true or false"),
])
def test_bad_token_fields_name_the_field(workload, field, words):
    with pytest.raises(InputError) as e:
        parse_scenario(_qlora(**workload))
    assert e.value.field == field and words in str(e.value)
