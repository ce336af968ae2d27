"""Memory per GPU: one test per published figure (source, layout, unit, tolerance in the test) + hand checks."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.estimates import ActivationLine, ResolvedModel, Source, detail
from planner.engine.memory import (
    CUBLAS_WORKSPACE_BYTES,
    CUBLAS_WORKSPACE_SM90_BYTES,
    CUDA_CONTEXT_BYTES,
    CUDNN_WORKSPACE_CNN_BYTES,
    NCCL_BUFFER_BYTES,
    RESERVED_OVER_CHURNED,
    StateBytes,
    activation_bytes,
    checkpoint_bytes,
    cuda_context_bytes,
    estimate_memory,
    fit_activation_line,
    fsdp_gathered_bytes,
    fsdp_transient_bytes,
    fsdp_units,
    logits_loss_bytes,
    max_micro_batch_that_fits,
    model_state_bytes,
    optimizer_temporary_bytes_per_param,
    quantized_base_params,
    trainable_params,
    transformer_activation_bytes,
    transient_bytes,
    transient_parts,
    workspace_bytes,
)
from planner.engine.memory_activations import (
    layer_activation_coefficients,
    mlp_activation_coefficient,
    resolve_attention,
)
from planner.engine.option import OptionPlan
from planner.inputs.errors import CannotEstimate, InputError
from planner.inputs.scenario import Adapter, TrainingSetup, TransformerShape
from planner.present.notes import render_part
from planner.vocab import GIB
from tests.notes_support import detail_en, english, texts, texts_of_triple  # noqa: F401

REL = 0.005  # published figures: within 0.5%
GPT2 = TransformerShape(layers=12, hidden=768, heads=12, seq_len=1024, vocab=50257)
LLAMA7B = TransformerShape(layers=32, hidden=4096, heads=32, seq_len=2048, vocab=32000, mlp="swiglu", ffn=11008)


def states(params, trainable, optimizer, layout, sharding, n_gpus, precision, largest=None, **kw) -> StateBytes:
    """model_state_bytes in the order the published tables read: Ψ, T, optimizer, layout, sharding, N, precision."""
    return model_state_bytes(params, trainable, optimizer=optimizer, state_layout=layout, sharding=sharding,
                             n_gpus=n_gpus, precision=precision, largest_layer_params=largest, **kw)


@dataclass(frozen=True)
class Gpu:
    """Stands in for planner.inputs.profiles.GpuProfile: the fields a memory estimate reads."""

    memory_gib: float
    compute_capability: str | None = None
    id: str = "test-gpu"


def option(precision, micro, accum, n_gpus, capacity_gib, compute_capability=None) -> OptionPlan:
    """One option in the order these tests read: precision, micro-batch, accumulation, GPUs, capacity (GiB)."""
    return OptionPlan(Gpu(capacity_gib, compute_capability), n_gpus=n_gpus, precision=precision, micro_batch=micro,
                      grad_accum=accum)


# ---------------------------------------------------------------- published figures


@pytest.mark.parametrize("sharding, expected_gb", [("none", 120.0), ("zero1", 31.4), ("zero2", 16.6),
                                                   ("zero3", 1.875)])
def test_zero_paper_figure_1(sharding, expected_gb):
    # Rajbhandari et al. 2020, "ZeRO", Fig. 1: 7.5B params, N = 64, K = 12 (mixed-precision Adam),
    # layout zero_paper, model states only, decimal GB; within 0.5%.
    got = states(7_500_000_000, 7_500_000_000, "adam", "zero_paper", sharding, 64, "fp16").total / 1e9
    assert got == pytest.approx(expected_gb, rel=REL)


def test_deepspeed_docs_t5_3b_zero2():
    # DeepSpeed docs, memory requirements: estimate_zero2_model_states_mem_needs_all_live(t5-3b), 2851M params,
    # 1 node x 8 GPUs, offload off: "15.93GB" per GPU (GiB); layout deepspeed; within 0.5%.
    got = states(2_851_000_000, 2_851_000_000, "adam", "deepspeed", "zero2", 8, "fp16").total / GIB
    assert got == pytest.approx(15.93, rel=REL)


@pytest.mark.parametrize("largest, expected_gib", [(32_000_000, 6.09), (32128 * 1024, 6.10)])
def test_deepspeed_docs_t5_3b_zero3(largest, expected_gib):
    # DeepSpeed docs, estimate_zero3_model_states_mem_needs: t5-3b 2851M params, 1 node x 8 GPUs, no offload:
    # "cold" example (largest layer 32M) 6.09 GiB; "all_live" 6.10 GiB (largest layer 32128 x 1024); within 0.5%.
    got = states(2_851_000_000, 2_851_000_000, "adam", "deepspeed", "zero3", 8, "fp16", largest).total / GIB
    assert got == pytest.approx(expected_gib, rel=REL)


def test_lora_llama7b_q_v_rank8():
    # Hu et al. 2021 (LoRA): r·(d_in + d_out) per adapted matrix; LLaMA-7B (32 x 4096), r = 8 on q and v:
    # 32 * 2 * 8 * (4096 + 4096) = 4,194,304 (exact; docs/methods.md#memory).
    model = ResolvedModel("llama", "decoder", 6_738_415_616, transformer=LLAMA7B)
    training = TrainingSetup(global_batch=8, adapter=Adapter("lora", 8, "qv", "bf16"))
    assert trainable_params(model, training) == 4_194_304


def test_fp32_adamw_foreach_peaks_at_20_bytes_per_param():
    # docs/methods.md#memory (checked on torch): fp32 AdamW foreach peaks at step() at 4 w + 4 g + 8 m,v + 4 temp
    # = 20 B/param for small batches; fused has no temporary (16 B/param). Exact.
    params = 10_000_000
    model = ResolvedModel("mlp", "mlp", params, activation_bytes_per_sample=1000.0, activation_precision="fp32")
    for impl, per_param in (("foreach", 20), ("fused", 16)):
        training = TrainingSetup(global_batch=1, optimizer="adamw", optimizer_impl=impl)
        est = estimate_memory(model, training, option("fp32", 1, 1, 1, 80.0))
        peak = est.weights + est.grads + est.optimizer + est.activations + est.transients
        # both peak at step(): the 1 kB of activations is freed by then, and no gradient exists in forward
        assert peak == pytest.approx(per_param * params)


@pytest.mark.parametrize("precision, per_param, distributed", [("fp16", 20, 4 + 16 / 8), ("bf16", 18, 6 + 12 / 8),
                                                               ("fp32", 16, 8 + 8 / 8)])
def test_megatron_bytes_per_param(precision, per_param, distributed):
    # Megatron-LM distributed optimizer docs: fp16 20, bf16 (fp32 grads) 18, fp32 16 B/param; distributed
    # optimizer (zero1) 4 + 16/d, 6 + 12/d, 8 + 8/d; d = 8 here. Exact.
    assert states(1000, 1000, "adam", "megatron", "none", 8, precision).total == pytest.approx(per_param * 1000)
    assert states(1000, 1000, "adam", "megatron", "zero1", 8, precision).total == pytest.approx(distributed * 1000)


def test_gpt2_logits_4sbv():
    # docs/methods.md#memory: GPT-2 (s = 1024, V = 50257) fp32 log-softmax 4sbV ≈ 206 MB per sample; within 0.5%.
    assert logits_loss_bytes(1024, 1, 50257) / 1e6 == pytest.approx(206, rel=REL)


# ---------------------------------------------------------------- model states, by hand


@pytest.mark.parametrize("layout, sharding, per_param", [
    ("torch_amp", "none", 16), ("torch_amp", "zero1", 8 + 8 / 4), ("torch_amp", "zero2", 4 + 12 / 4),
    ("torch_amp", "zero3", 16 / 4), ("zero_paper", "zero1", 4 + 12 / 4), ("zero_paper", "zero2", 2 + 14 / 4),
    ("pure_bf16", "none", 8), ("pure_bf16", "zero1", 4 + 4 / 4), ("pure_bf16", "zero2", 2 + 6 / 4),
    ("pure_bf16", "zero3", 8 / 4),
])
def test_state_layout_table(layout, sharding, per_param):
    # docs/methods.md#memory table, Adam, N = 4, no gathered unit (largest layer not given).
    assert states(1000, 1000, "adamw", layout, sharding, 4, "bf16").total == pytest.approx(per_param * 1000)


@pytest.mark.parametrize("optimizer, opt_bytes", [("sgd", 0), ("sgd_momentum", 4), ("adam", 8), ("adafactor", 0),
                                                  ("adam8bit", 2)])
def test_optimizers_torch_amp(optimizer, opt_bytes):
    s = states(1000, 1000, optimizer, "torch_amp", "none", 1, "fp32")
    assert (s.weights, s.grads, s.optimizer) == (4000, 4000, opt_bytes * 1000)


def test_frozen_params_hold_weights_only():
    s = states(1000, 250, "adamw", "torch_amp", "none", 1, "bf16")
    assert (s.weights, s.grads, s.optimizer) == (4000, 1000, 2000)


def test_qlora_nf4_base_bytes():
    # nf4 = 4 bits + fp32 absmax per 64 weights = 0.5625 B/param (QLoRA §2, no double quantisation).
    s = states(1_000_000 + 64, 64, "adamw", "torch_amp", "none", 1, "bf16", adapter_base_dtype="nf4")
    assert s.weights == pytest.approx(1_000_000 * 0.5625 + 64 * 4)
    assert s.optimizer == 64 * 8


def test_qlora_under_deepspeed_zero3_gathers_the_4bit_storage():
    """Issue 33: QLoRA base weights were all-gathered at 2 B a parameter under DeepSpeed ZeRO-3; the gathered unit
    moves the stored nf4 (0.5625 B a weight, QLoRA §2), and a frozen unit has gradients only for its adapters."""
    params, trainable, unit, n = 1_000_000_000, 10_000_000, 50_000_000, 8
    base = params - trainable
    q = states(params, trainable, "adamw", "deepspeed", "zero3", n, "bf16", unit, adapter_base_dtype="nf4")
    full = states(params, params, "adamw", "deepspeed", "zero3", n, "bf16", unit)
    assert q.weights == pytest.approx((2 * trainable + 0.5625 * base) / n + 0.5625 * unit)
    assert q.grads == pytest.approx(4 * trainable / n + 2 * unit * trainable / params)
    assert full.weights == pytest.approx(2 * params / n + 2 * unit)  # the estimator's 4·LL, half weights, unchanged
    assert full.grads == pytest.approx(4 * params / n + 2 * unit)


def test_zero3_gathered_unit():
    # torch_amp Z3: 16Ψ/N + largest layer's fp32 weights and grads (4 + 4 B each).
    s = states(8000, 8000, "adamw", "torch_amp", "zero3", 8, "bf16", largest=100)
    assert s.total == pytest.approx(16 * 8000 / 8 + 8 * 100)


def test_checkpoint_bytes():
    assert checkpoint_bytes(1000, 1000, optimizer="adamw", state_layout="torch_amp") == 12_000
    assert checkpoint_bytes(1000, 1000, optimizer="adam", state_layout="deepspeed") == 2000 + 12_000


# ---------------------------------------------------------------- activation formulas, by hand


@pytest.mark.parametrize("precision, layout, attention, dropout, expected", [
    ("bf16", "megatron", "eager", True, (34, 5, 0)),    # Korthikanti et al. 2022 eq. 1
    ("bf16", "megatron", "eager", False, (32, 2, 0)),
    ("fp16", "pure_bf16", "sdpa", True, (34, 0, 4)),     # + 4·a·s·b fp32 logsumexp
    ("bf16", "zero_paper", "sdpa", False, (32, 0, 4)),
    ("fp32", "torch_amp", "eager", True, (66, 9, 0)),
    ("tf32", "torch_amp", "eager", False, (64, 4, 0)),
    ("fp32", "torch_amp", "sdpa", True, (66, 0, 4)),
    ("fp32", "torch_amp", "sdpa", False, (64, 0, 4)),
    ("bf16", "torch_amp", "eager", True, (38, 7, 0)),   # fp32 LayerNorm inputs + fp32 softmax
    ("bf16", "torch_amp", "eager", False, (36, 6, 0)),
    ("fp16", "torch_amp", "sdpa", True, (38, 0, 4)),
    ("bf16", "torch_amp", "sdpa", False, (36, 0, 4)),
])
def test_layer_coefficients(precision, layout, attention, dropout, expected):
    # docs/methods.md#memory "Activations": coefficients of (s·b·h, a·s²·b, a·s·b) for the 4h GeLU block.
    got = layer_activation_coefficients(GPT2, precision, attention=attention, dropout=dropout, layout=layout)
    assert got == expected


def test_swiglu_mlp_term():
    # Derived in mlp_activation_coefficient: 2 + 8f/h at 16-bit; LLaMA-7B f/h = 11008/4096 = 2.6875 -> 23.5.
    assert mlp_activation_coefficient(LLAMA7B, 2) == pytest.approx(23.5)
    # whole block, 16-bit, SDPA, no dropout: LayerNorm 4 + attention 10 + MLP 23.5.
    layernorm = replace(LLAMA7B, norm="layernorm")
    block = layer_activation_coefficients(layernorm, "bf16", attention="sdpa", dropout=False, layout="megatron")
    assert block[0] == pytest.approx(37.5)
    # LLaMA's RMSNorm (default for SwiGLU shapes) as Hugging Face writes it saves its fp32 upcast (4) and the
    # normalised 16-bit output (2) per norm: 2 x 6 = 12 instead of 4.
    block = layer_activation_coefficients(LLAMA7B, "bf16", attention="sdpa", dropout=False, layout="megatron")
    assert block[0] == pytest.approx(45.5)
    # GeLU at f = 4h gives Korthikanti's MLP 18 (+1 mask).
    assert mlp_activation_coefficient(GPT2, 2) == 18


def test_gpt2_amp_sdpa_total_by_hand():
    # b = 1, bf16 AMP, SDPA, dropout: 12 * (38·sbh + 4·a·s) + (1 + 4 + 2)·sbh + (2 + 4 + 4)·sbV
    sbh, sbv = 1024 * 768, 1024 * 50257
    expected = 12 * (38 * sbh + 4 * 12 * 1024) + 7 * sbh + 10 * sbv
    assert expected == 879_339_520
    got = transformer_activation_bytes(GPT2, 1, "bf16", attention="sdpa", dropout=True, layout="torch_amp")
    assert got == expected


def test_gpt2_fp32_manual_total_by_hand():
    # b = 2, fp32, manual attention, no dropout: 12 * (64·sbh + 4·a·s²·b) + (4 + 4)·sbh + (4 + 4 + 4)·sbV
    s, b, h, a, v = 1024, 2, 768, 12, 50257
    expected = 12 * (64 * s * b * h + 4 * a * s * s * b) + 8 * s * b * h + 12 * s * b * v
    assert transformer_activation_bytes(GPT2, 2, "fp32", attention="eager", dropout=False) == expected


def test_checkpointing_by_hand():
    # 16-bit (megatron), SDPA, no dropout: L block inputs at 2·sbh + one block (32·sbh + 4·a·s·b) + head.
    sbh, sbv = 1024 * 768, 1024 * 50257
    head = (0 + 2 + 2) * sbh + (2 + 8) * sbv
    expected = 12 * 2 * sbh + (32 * sbh + 4 * 12 * 1024) + head
    assert transformer_activation_bytes(GPT2, 1, "bf16", attention="sdpa", checkpointing=True, dropout=False,
                                        layout="megatron") == expected
    # torch AMP keeps the fp32 residual: 4·sbh per block input.
    amp = transformer_activation_bytes(GPT2, 1, "bf16", attention="sdpa", checkpointing=True, dropout=False,
                                       layout="torch_amp")
    assert amp == 12 * 4 * sbh + (36 * sbh + 4 * 12 * 1024) + (4 + 2) * sbh + 10 * sbv


# ---------------------------------------------------------------- activation sources


def test_activation_precedence_and_sources():
    line = ActivationLine(1e8, 2e8, "bf16", Source("measured", parts=(detail("measured_median", batch=8, labels="gpt2 h100 2026-01-01"),)))
    model = ResolvedModel("gpt2", "decoder", 124_000_000, transformer=GPT2, activation_bytes_per_sample=5.0)
    value, src = activation_bytes(model, "bf16", 4, line=line)
    assert (value, src.kind) == (1e8 + 4 * 2e8, "measured")
    value, src = activation_bytes(model, "bf16", 1)
    assert src.kind == "analytic" and "Korthikanti" in detail_en(src) and value > 8e8
    user = ResolvedModel("cnn", "cnn", 25_000_000, activation_bytes_per_sample=1e8, activation_precision="fp32")
    value, src = activation_bytes(user, "fp32", 3)
    assert (value, src.kind) == (3e8, "user")
    # fp32 -> pure 16-bit halves; checkpointing keeps 0.5 without a shape (Chen et al. 2016).
    value, _ = activation_bytes(user, "bf16", 1, checkpointing=True, layout="pure_bf16")
    assert value == pytest.approx(1e8 / 2 * 0.5)


def test_checkpointing_scales_line_slope_by_formula_ratio():
    model = ResolvedModel("gpt2", "decoder", 124_000_000, transformer=GPT2)
    line = ActivationLine(1e8, 1e9, "bf16", Source("traced"))
    full = transformer_activation_bytes(GPT2, 1, "bf16", dropout=True)
    kept = transformer_activation_bytes(GPT2, 1, "bf16", dropout=True, checkpointing=True)
    value, src = activation_bytes(model, "bf16", 2, checkpointing=True, line=line)
    assert value == pytest.approx(1e8 + 2 * 1e9 * kept / full)
    assert "checkpointing" in detail_en(src)


def test_no_activation_data_is_a_clear_error():
    model = ResolvedModel("mystery", "custom", 1000)
    with pytest.raises(CannotEstimate, match=r"activation size for model mystery.*bench trace"):
        activation_bytes(model, "bf16", 1)


# ---------------------------------------------------------------- transients


def test_transients_by_hand():
    t = 1000
    # bf16 AMP foreach AdamW, DDP over 8: step = temp 4T + buckets 4T; forward = cache 2T + buckets 4T.
    parts = transient_parts(t, precision="bf16", optimizer="adamw", n_gpus=8)
    assert (parts.step, parts.forward) == (8 * t, 6 * t)
    assert transient_bytes(t, precision="bf16", optimizer="adamw", n_gpus=8, activations=5 * t) == 6 * t
    # ZeRO-1 over 4: the step runs on a 1/4 shard, no DDP buckets.
    assert transient_parts(t, precision="fp32", optimizer="adamw", n_gpus=4, sharding="zero1").step == t
    assert transient_parts(t, precision="fp32", optimizer="sgd_momentum", optimizer_impl="fused",
                           grad_accum=4).step == 0
    assert transient_parts(t, precision="fp32", optimizer="adam8bit").step == 0


# ---------------------------------------------------------------- overheads, fit and notes


def test_workspace_defaults():
    assert workspace_bytes("decoder", "8.0") == 2 * CUBLAS_WORKSPACE_BYTES == 2 * 8.125 * 2**20
    assert workspace_bytes("decoder", "9.0") == 2 * CUBLAS_WORKSPACE_SM90_BYTES == 64 * 2**20
    assert workspace_bytes("cnn", "8.6") == 2 * CUBLAS_WORKSPACE_BYTES + CUDNN_WORKSPACE_CNN_BYTES


def _boundary_model():
    # 2^25 params x 16 B (fp32 fused AdamW) = 0.5 GiB; activations 0.5 GiB: exactly 1 GiB before overheads
    # when gradients stay alive through forward (accumulation 2, as the boundary tests below use).
    return ResolvedModel("m", "mlp", 2**25, activation_bytes_per_sample=2.0**29, activation_precision="fp32")


def test_fit_boundary_at_exactly_the_capacity():
    training = TrainingSetup(global_batch=1, optimizer="adamw", optimizer_impl="fused")
    # 1 GiB of states and activations + 18 GiB of workspace = 19 GiB allocated; + fragmentation on the 0.625 GiB the
    # allocator churns (0.125 GiB of gradients kept through accumulation + 0.5 GiB of activations); no context.
    at = estimate_memory(_boundary_model(), training, option("fp32", 1, 2, 1, 20.0), workspace_gib=18.0,
                         context_gib=0.0)
    assert at.allocated_peak == 19 * GIB and at.churned == 0.625 * GIB
    assert at.total == at.reserved_peak == pytest.approx(19 * GIB + RESERVED_OVER_CHURNED * 0.625 * GIB)
    capacity_gib = at.total / GIB  # the device total against the whole capacity (no 5% margin since issue 16)
    exact = estimate_memory(_boundary_model(), training, option("fp32", 1, 2, 1, capacity_gib), workspace_gib=18.0,
                            context_gib=0.0)
    assert exact.total <= exact.usable and exact.fits
    over = estimate_memory(_boundary_model(), training, option("fp32", 1, 2, 1, capacity_gib * (1 - 1e-9)),
                           workspace_gib=18.0, context_gib=0.0)
    assert not over.fits


def test_overhead_defaults_and_tight_note():
    training = TrainingSetup(global_batch=1, optimizer="adamw", optimizer_impl="fused")
    est = estimate_memory(_boundary_model(), training, option("fp32", 1, 2, 2, 2.0, "9.0"))
    assert est.context == CUDA_CONTEXT_BYTES and est.nccl == NCCL_BUFFER_BYTES
    assert est.workspace == 64 * 2**20
    single = estimate_memory(_boundary_model(), training, option("fp32", 1, 2, 1, 2.0), workspace_gib=0.5,
                             context_gib=0)
    assert single.nccl == 0 and single.workspace == 0.5 * GIB
    assert single.allocated_peak == 1.5 * GIB
    assert single.headroom == pytest.approx(1 - (1.5 + RESERVED_OVER_CHURNED * 0.625) / 2.0)
    assert single.notes == ()
    # 1.62 GiB required on 1.74 GiB: fits with 7% headroom, inside the 8% band: the verdict is borderline
    tight = estimate_memory(_boundary_model(), training, option("fp32", 1, 2, 1, 1.74), workspace_gib=0.5,
                            context_gib=0)
    assert tight.fits and tight.verdict == "borderline" and tight.fit_margin_gib == pytest.approx(1.74 - 1.61875)
    assert texts(tight.notes) == ("headroom 7% (borderline: within 8% of the capacity, the memory model's held-out "
                                  "error)",)


def test_measured_line_skips_in_allocator_workspace():
    training = TrainingSetup(global_batch=1)
    line = ActivationLine(0.0, 2.0**30, "fp32",
                          Source("measured", parts=(detail("measured_median", batch=1, labels="x.json"),)))
    est = estimate_memory(_boundary_model(), training, option("fp32", 1, 2, 1, 80.0), line=line)
    assert est.workspace == 0 and est.activations == 2.0**30


def test_max_micro_batch_that_fits():
    training = TrainingSetup(global_batch=64, optimizer="adamw", optimizer_impl="fused")
    # 0.5 GiB states + 0.5 GiB per sample, no workspace or context: b fits while (0.5 + 0.5·b) x 1.11 <= 4 GiB.
    b = max_micro_batch_that_fits(_boundary_model(), training, option("fp32", 1, 1, 1, 4.0), [1, 2, 4, 6, 7, 8],
                                  workspace_gib=0.0, context_gib=0.0)
    assert b == 6
    assert max_micro_batch_that_fits(_boundary_model(), training, option("fp32", 1, 1, 1, 0.5), [1, 2]) is None


# ---------------------------------------------------------------- fitting measured peaks


def test_fit_recovers_line_and_ignores_flat_points():
    states_bytes, m0, slope, m_step = 10e9, 12e9, 0.5e9, 13.5e9
    points = [(b, max(m_step, m0 + slope * b)) for b in (1, 2, 4, 8, 16)]
    line = fit_activation_line(points, states_bytes, "bf16", Source("measured"))
    assert line.bytes_per_sample == pytest.approx(slope) and line.intercept_bytes == pytest.approx(2e9)
    assert line.max_batch_measured == 16 and line.precision == "bf16"


def test_fit_two_points_exact_one_point_none_and_clamp():
    line = fit_activation_line([(2, 5e9), (4, 7e9)], 4.5e9, "fp32", Source("traced"))
    assert (line.bytes_per_sample, line.intercept_bytes) == (1e9, 0.0)  # M0 = 3e9 < states: clamped
    assert fit_activation_line([(8, 5e9)], 0.0, "fp32", Source("traced")) is None
    assert fit_activation_line([(1, 5e9), (2, 5e9), (4, 5e9)], 0.0, "fp32", Source("traced")) is None


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("kwargs, match", [
    ({"state_layout": "apex"}, "state_layout"),
    ({"state_layout": "deepspeed", "sharding": "zero1"}, "zero2 or zero3 with state_layout deepspeed"),
    ({"state_layout": "megatron", "sharding": "zero3"}, "distributed optimizer"),
    ({"optimizer": "lion"}, "training.optimizer"),
    ({"sharding": "zero4"}, "training.sharding"),
])
def test_bad_state_inputs_raise(kwargs, match):
    args = {"params": 1000, "trainable": 1000, "optimizer": "adamw", "state_layout": "torch_amp",
            "sharding": "none", "n_gpus": 8, "precision": "bf16"} | kwargs
    with pytest.raises(ValueError, match=match):
        model_state_bytes(**args)


def test_adapter_without_transformer_is_input_error():
    model = ResolvedModel("resnet50", "cnn", 25_557_032)
    training = TrainingSetup(global_batch=8, adapter=Adapter("lora", 8, "qv", "bf16"))
    with pytest.raises(InputError, match="model.transformer"):
        trainable_params(model, training)


# ---------------------------------------------------------------- invariant


@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 64), n=st.sampled_from([1, 2, 8]), precision=st.sampled_from(["fp32", "tf32", "fp16", "bf16"]),
    optimizer=st.sampled_from(["sgd", "sgd_momentum", "adam", "adamw", "adafactor", "adam8bit"]),
    impl=st.sampled_from(["foreach", "fused"]), sharding=st.sampled_from(["none", "zero1", "zero2", "zero3"]),
    checkpointing=st.booleans(),
)
def test_breakdown_is_non_negative_and_sums_to_the_peak(b, n, precision, optimizer, impl, sharding, checkpointing):
    # docs/methods.md#memory: peak = states + max(step transients, activations + forward transients).
    model = ResolvedModel("gpt2", "decoder", 124_000_000, transformer=GPT2)
    training = TrainingSetup(global_batch=64, optimizer=optimizer, optimizer_impl=impl, sharding=sharding,
                             activation_checkpointing=checkpointing)
    est = estimate_memory(model, training, option(precision, b, 1, n, 80.0, "8.0"))
    assert all(v >= 0 for v in est.parts_gib().values())
    parts = transient_parts(124_000_000, precision=precision, optimizer=optimizer, optimizer_impl=impl, n_gpus=n,
                            sharding=sharding)
    gathered = fsdp_transient_bytes(model, training, precision=precision, n_gpus=n, grad_accum=1)
    assert (gathered > 0) == (sharding == "zero3" and n > 1)  # FSDP FULL_SHARD's root unit and prefetched blocks
    peak = est.weights + est.grads + est.optimizer + max(parts.step, est.activations + parts.forward + gathered)
    assert est.allocated_peak == pytest.approx(peak + est.workspace)
    assert est.reserved_peak == pytest.approx(est.allocated_peak + RESERVED_OVER_CHURNED * est.churned)
    assert est.churned == pytest.approx(est.grads + est.activations + est.transients)
    assert est.total == pytest.approx(est.reserved_peak + est.context + est.nccl)


def test_gradients_are_not_alive_in_forward_at_accumulation_1():
    # docs/methods.md#memory: zero_grad(set_to_none=True) frees grads before forward; with accumulation > 1 they stay
    # alive through forward (+4T). Activation-dominated batch: 0.5 GiB of activations vs 0.125 GiB of grads.
    training = TrainingSetup(global_batch=2, optimizer="adamw", optimizer_impl="fused")
    one = estimate_memory(_boundary_model(), training, option("fp32", 1, 1, 1, 80.0), workspace_gib=0,
                          context_gib=0)
    two = estimate_memory(_boundary_model(), training, option("fp32", 1, 2, 1, 80.0), workspace_gib=0,
                          context_gib=0)
    assert one.grads == 0 and one.activations == 2**29
    assert two.grads == 4 * 2**25
    assert two.allocated_peak - one.allocated_peak == 4 * 2**25


def test_small_batch_peak_is_at_the_optimizer_step_and_says_so():
    model = ResolvedModel("m", "mlp", 2**25, activation_bytes_per_sample=1e6, activation_precision="fp32")
    est = estimate_memory(model, TrainingSetup(global_batch=1), option("fp32", 1, 1, 1, 80.0))
    assert est.activations == 0 and est.grads == 4 * 2**25
    assert any(n.startswith("the peak is at optimizer.step()") for n in texts(est.notes))


# ---------------------------------------------------------------- issue 16: shape knobs, attention, phases, figures

MISTRAL = TransformerShape(layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000, mlp="swiglu", ffn=14336,
                           kv_heads=8, dropout=0.0)


def test_flash_keeps_grouped_keys_and_values_at_kv_heads():
    # (1 + 2·kv/a)·t for Q, K, V with FlashAttention (native GQA) vs 3t once K and V are repeated (SDPA, eager).
    flash = layer_activation_coefficients(MISTRAL, "bf16", attention="flash", layout="pure_bf16")[0]
    sdpa = layer_activation_coefficients(MISTRAL, "bf16", attention="sdpa", layout="pure_bf16")[0]
    assert sdpa - flash == pytest.approx(2 * 2 * (1 - 8 / 32))


@pytest.mark.parametrize("precision, capability, family, kernel, flash_allowed", [
    ("bf16", "8.0", "decoder", "flash kernel", True), ("fp16", "9.0", "vit", "flash kernel", True),
    ("fp16", "7.5", "decoder", "memory-efficient kernel", False), ("fp32", "9.0", "encoder", "memory-efficient", False),
    ("tf32", "8.0", "decoder", "memory-efficient", False), ("bf16", None, "decoder", "memory-efficient", False),
])
def test_attention_default_and_what_flash_needs(precision, capability, family, kernel, flash_allowed):
    # Default: PyTorch's fused SDPA (the common stacks repeat grouped K/V before it); it says which kernel runs.
    attention, why = resolve_attention(None, family=family, precision=precision, compute_capability=capability)
    assert attention == "sdpa" and kernel in render_part(why, "en")
    assert resolve_attention("eager", family=family, precision=precision,
                             compute_capability=capability) == ("eager", "model.attention")
    # FlashAttention-2 itself runs fp16/bf16 on sm80+ only; elsewhere the plan says SDPA and why.
    flash = resolve_attention("flash", family=family, precision=precision, compute_capability=capability)
    assert flash[0] == ("flash" if flash_allowed else "sdpa")


def test_a_sequence_level_head_or_chunked_loss_keeps_no_logits():
    full = transformer_activation_bytes(GPT2, 1, "bf16", dropout=False, layout="pure_bf16")
    for loss in ("chunked", "sequence"):
        other = transformer_activation_bytes(replace(GPT2, loss=loss), 1, "bf16", dropout=False, layout="pure_bf16")
        assert full - other == pytest.approx(1024 * 50257 * (2 + 8))  # t·sbV logits + 4sbV log-softmax + its grad


def test_a_frozen_base_keeps_less_and_a_quantised_one_keeps_its_linear_inputs():
    lora = Adapter("lora", 8, "qv", "bf16")
    qlora = Adapter("qlora", 8, "qv", "nf4")
    full = layer_activation_coefficients(LLAMA7B, "bf16", layout="pure_bf16", dropout=False)[0]
    frozen = layer_activation_coefficients(LLAMA7B, "bf16", layout="pure_bf16", dropout=False, adapter=lora)[0]
    quantised = layer_activation_coefficients(LLAMA7B, "bf16", layout="pure_bf16", dropout=False, adapter=qlora)[0]
    old_bnb = layer_activation_coefficients(LLAMA7B, "bf16", layout="pure_bf16", dropout=False,
                                            adapter=replace(qlora, nf4_keeps_input=True))[0]
    int8 = layer_activation_coefficients(LLAMA7B, "bf16", layout="pure_bf16", dropout=False,
                                         adapter=replace(qlora, base_dtype="int8"))[0]
    f_over_h = 11008 / 4096
    # frozen: 2 RMSNorm fp32 upcasts 8 + Q, K, V, out 8 + SiLU input, SiLU and up outputs 6f/h + LoRA input 2
    assert frozen == pytest.approx(8 + 8 + 6 * f_over_h + 2)
    # bitsandbytes >= 0.43.2's 4-bit matmul keeps only the weight: as a 16-bit frozen base
    assert quantised == pytest.approx(frozen)
    # before 0.43.2 (and int8 in every version) it keeps the MLP and down-projection inputs too: + 2 + 2f/h
    assert old_bnb == pytest.approx(frozen + 2 + 2 * f_over_h) == pytest.approx(int8)
    assert frozen < old_bnb < full
    dropped = layer_activation_coefficients(LLAMA7B, "bf16", layout="pure_bf16", dropout=False,
                                            adapter=replace(lora, dropout=0.05))[0]
    # with lora_dropout the adapters keep a mask and a dropped copy per adapted matrix (q, v) instead of the input
    assert dropped == pytest.approx(frozen - 2 + 2 * (1 + 2))


def test_a_quantised_base_keeps_embeddings_and_head_at_16_bit():
    model = ResolvedModel("llama", "decoder", 6_738_415_616, transformer=LLAMA7B)
    quantised = quantized_base_params(model)
    assert quantised == 6_738_415_616 - 2 * 32000 * 4096
    nf4 = model_state_bytes(model.params, 0, optimizer="adamw", state_layout="pure_bf16", precision="bf16",
                            adapter_base_dtype="nf4", quantized_params=quantised).weights
    assert nf4 == pytest.approx(quantised * (0.5 + 4 / 64) + 2 * 32000 * 4096 * 2.0)
    dq = model_state_bytes(model.params, 0, optimizer="adamw", state_layout="pure_bf16", precision="bf16",
                           adapter_base_dtype="nf4_dq", quantized_params=quantised).weights
    assert nf4 - dq == pytest.approx(quantised * (4 / 64 - 0.127 / 8), rel=1e-3)  # QLoRA §2: 0.5 -> 0.127 bit


def test_three_figures_and_the_phase_that_sets_the_peak():
    model = ResolvedModel("gpt2", "decoder", 124_000_000, transformer=GPT2)
    training = TrainingSetup(global_batch=8)
    big = estimate_memory(model, training, option("bf16", 8, 1, 1, 80.0, "8.0"))
    assert big.allocated_peak < big.reserved_peak < big.device_total == big.total
    assert big.reserved_peak == pytest.approx(big.allocated_peak + RESERVED_OVER_CHURNED * big.churned)
    assert big.phase == "backward" and big.activations > 0
    # the head's weight gradient (V×h, 4 B under torch AMP) exists at the start of backward with every activation
    assert big.grads == pytest.approx(4 * 50257 * 768)
    tiny = estimate_memory(ResolvedModel("m", "mlp", 2**25, activation_bytes_per_sample=1e3,
                                         activation_precision="fp32"), training, option("fp32", 1, 1, 1, 80.0))
    assert tiny.phase == "optimizer_step" and tiny.activations == 0


def test_zero_grad_without_set_to_none_keeps_gradients_through_forward():
    training = TrainingSetup(global_batch=2, optimizer="adamw", optimizer_impl="fused")
    kept = replace(training, set_grads_to_none=False)
    freed = estimate_memory(_boundary_model(), training, option("fp32", 1, 1, 1, 80.0), workspace_gib=0,
                            context_gib=0)
    zeroed = estimate_memory(_boundary_model(), kept, option("fp32", 1, 1, 1, 80.0), workspace_gib=0,
                             context_gib=0)
    assert zeroed.allocated_peak - freed.allocated_peak == 4 * 2**25


def test_a_per_parameter_optimizer_loop_holds_no_full_size_temporary():
    assert optimizer_temporary_bytes_per_param("adamw", "for_loop", "torch_amp") == 0
    assert optimizer_temporary_bytes_per_param("adamw", "foreach", "torch_amp") == 4


def test_a_line_below_its_smallest_batch_keeps_per_sample_growth():
    # Issue 16: bert_large's traced line (batches 8-32) at batch 4 must not say "0 activations": the fitted line
    # keeps its slope and a non-negative intercept below the smallest traced batch.
    states = 1e9
    line = fit_activation_line([(8, states + 8e8 + 1e7), (16, states + 16e8 + 1e7), (32, states + 32e8 + 1e7)],
                               states, "bf16", Source("traced"))
    assert line is not None and line.intercept_bytes >= 0
    model = ResolvedModel("m", "encoder", 100_000_000)
    at_4, _ = activation_bytes(model, "bf16", 4, line=line)
    at_1, _ = activation_bytes(model, "bf16", 1, line=line)
    assert at_4 == pytest.approx(4e8 + line.intercept_bytes) and at_4 - at_1 == pytest.approx(3e8)


# ---------------------------------------------------------------- FSDP as it runs (FULL_SHARD, BACKWARD_PRE, no_sync)

LLAMA2_7B = TransformerShape(layers=32, hidden=4096, heads=32, seq_len=512, vocab=32000, mlp="swiglu", ffn=11008)


def test_fsdp_units_root_and_block_of_llama2_7b():
    # Root unit: token embedding + untied LM head, 2 x 32000 x 4096; one block 4h² + 3hf (SwiGLU).
    units = fsdp_units(ResolvedModel("llama2_7b", "decoder", 6_738_415_616, transformer=LLAMA2_7B))
    assert units is not None
    assert units.root == 2 * 32000 * 4096 == 262_144_000
    assert units.block == 4 * 4096**2 + 3 * 4096 * 11008 == 202_375_168


def test_fsdp_gathered_bytes_by_hand():
    # bf16: root + 2 blocks of parameters at 2 B, root + 1 block of gradients at 2 B (BACKWARD_PRE's peak plus the
    # root kept unsharded after forward); no_sync counts the gradients whole elsewhere, so parameters only.
    units = fsdp_units(ResolvedModel("llama2_7b", "decoder", 6_738_415_616, transformer=LLAMA2_7B))
    assert units is not None
    got = fsdp_gathered_bytes(units, precision="bf16", trainable_fraction=1.0, no_sync=False)
    assert got == 2 * (262_144_000 + 2 * 202_375_168) + 2 * (262_144_000 + 202_375_168)
    assert fsdp_gathered_bytes(units, precision="bf16", trainable_fraction=1.0, no_sync=True) == \
        2 * (262_144_000 + 2 * 202_375_168)
    assert fsdp_gathered_bytes(units, precision="fp32", trainable_fraction=0.0, no_sync=False) == \
        4 * (262_144_000 + 2 * 202_375_168)


def test_fsdp_no_sync_keeps_full_gradients_through_accumulation():
    # FSDP no_sync: the full bf16 gradients (2 B x Ψ) stay on every GPU through the accumulation micro-steps; without
    # it (FSDP2's default, reduce-scatter per micro-batch) only the 1/N shard. Same option, the flag alone.
    model = ResolvedModel("llama2_7b", "decoder", 6_738_415_616, transformer=LLAMA2_7B)
    base = TrainingSetup(global_batch=64, precisions=("bf16",), state_layout="pure_bf16", sharding="zero3",
                         activation_checkpointing=True)
    opt = option("bf16", 4, 4, 4, 22.5, "8.6")
    sharded = estimate_memory(model, base, opt)
    synced = estimate_memory(model, replace(base, fsdp_no_sync=True), opt)
    assert synced.phase == "backward" and synced.grads == 2 * 6_738_415_616
    assert sharded.grads == pytest.approx(2 * 6_738_415_616 / 4)
    assert any(n.key == "fsdp_no_sync_grads" for n in synced.notes)
    assert sharded.fits and not synced.fits
    # at accumulation 1 there is no no_sync window: the flag changes nothing
    one = option("bf16", 4, 1, 4, 22.5, "8.6")
    assert estimate_memory(model, replace(base, fsdp_no_sync=True), one).allocated_peak == \
        estimate_memory(model, base, one).allocated_peak


def test_fsdp_units_are_not_model_states_and_deepspeed_zero3_is_unchanged():
    # FSDP's gathered units are backward-time transients; the DeepSpeed layout keeps the estimator's 4·LL states.
    model = ResolvedModel("llama2_7b", "decoder", 6_738_415_616, transformer=LLAMA2_7B)
    fsdp = TrainingSetup(global_batch=64, precisions=("bf16",), state_layout="pure_bf16", sharding="zero3")
    est = estimate_memory(model, fsdp, option("bf16", 1, 1, 8, 80.0, "9.0"))
    assert est.weights == pytest.approx(2 * 6_738_415_616 / 8)
    assert fsdp_transient_bytes(model, fsdp, precision="bf16", n_gpus=8, grad_accum=1) > 0
    assert fsdp_transient_bytes(model, fsdp, precision="bf16", n_gpus=1, grad_accum=1) == 0
    ds = TrainingSetup(global_batch=64, precisions=("bf16",), state_layout="deepspeed", sharding="zero3")
    assert fsdp_transient_bytes(model, ds, precision="bf16", n_gpus=8, grad_accum=1) == 0


# ---------------------------------------------------------------- QLoRA as PEFT runs it (prepare_model_for_kbit_training)


def test_kbit_upcast_makes_embeddings_and_head_fp32():
    # PEFT casts every fp16/bf16 parameter that is not Params4bit to fp32: Llama 2 7B's token embedding and untied
    # LM head (2 x 32000 x 4096 = 262,144,000 params) go from 2 to 4 B; the nf4 blocks (0.5 + 4/64 B) do not move.
    model = ResolvedModel("llama2_7b", "decoder", 6_738_415_616, transformer=LLAMA2_7B)
    peft = TrainingSetup(global_batch=1, precisions=("bf16",), state_layout="pure_bf16",
                         adapter=Adapter("qlora", 8, "qv", "nf4"))
    litgpt = replace(peft, adapter=Adapter("qlora", 8, "qv", "nf4", kbit_upcast=False))
    opt = option("bf16", 1, 1, 1, 40.0, "8.0")
    up, plain = estimate_memory(model, peft, opt), estimate_memory(model, litgpt, opt)
    assert up.weights - plain.weights == pytest.approx(2 * 262_144_000)
    quantized, adapters = 6_738_415_616 - 262_144_000, 32 * 2 * 8 * (4096 + 4096)  # LoRA r 8 on q, v: bf16
    assert plain.weights == pytest.approx(quantized * (0.5 + 4 / 64) + 262_144_000 * 2 + 2 * adapters)
    assert up.weights == pytest.approx(quantized * (0.5 + 4 / 64) + 262_144_000 * 4 + 2 * adapters)
    # a bf16 base (plain LoRA) is never upcast: PEFT's prepare_model_for_kbit_training is for quantised bases
    lora = replace(peft, adapter=Adapter("lora", 8, "qv", "bf16", kbit_upcast=True))
    assert estimate_memory(model, lora, opt).weights == pytest.approx(2 * 6_738_415_616 + 2 * adapters)


# ---------------------------------------------------------------- CUDA context by generation and architecture


def test_cuda_context_by_generation_and_architecture():
    # eager module loading on a V100: the HF docs' nvidia-smi figure, 1343 MiB; lazy (CUDA >= 12.2 / PyTorch >= 1.13,
    # the default) 0.5 GiB, above the 256-426 MiB bare contexts measured; an unlisted architecture takes its
    # generation's row.
    mib, why = cuda_context_bytes("7.0", cuda_generation="eager")
    assert mib == 1343 * 2**20 and why.key == "source_detail.context_eager_v100" and "V100" in render_part(why, "en")
    assert cuda_context_bytes("9.0", cuda_generation="eager")[0] == 1343 * 2**20
    assert cuda_context_bytes("9.0")[0] == cuda_context_bytes(None)[0] == CUDA_CONTEXT_BYTES == 0.5 * GIB
    with pytest.raises(InputError, match="cuda_generation"):
        cuda_context_bytes("9.0", cuda_generation="lazier")


def test_the_context_used_is_named_in_the_estimate():
    training = TrainingSetup(global_batch=8, optimizer="adamw")
    model = ResolvedModel("gpt2", "decoder", 124_000_000, transformer=GPT2)
    eager = estimate_memory(model, training, option("fp32", 1, 1, 1, 16.0, "7.0"), cuda_generation="eager")
    lazy = estimate_memory(model, training, option("fp32", 1, 1, 1, 16.0, "7.0"))
    assert eager.context == 1343 * 2**20 and lazy.context == 0.5 * GIB
    assert eager.device_total - lazy.device_total == pytest.approx(1343 * 2**20 - 0.5 * GIB)
    note = next(n for n in eager.notes if n.key == "cuda_context")
    assert dict(note.items)["mib"] == 1343 and dict(note.items)["generation"] == "eager"
    given = estimate_memory(model, training, option("fp32", 1, 1, 1, 16.0, "7.0"), context_gib=1.0)
    assert given.context == GIB and not any(n.key == "cuda_context" for n in given.notes)


# ---------------------------------------------------------------- the head's gradient, once


def test_measured_line_with_kept_grads_counts_the_head_gradient_once():
    # A measured line's intercept holds the LM head's gradient (the measured peak is the start of backward, head
    # gradient allocated). set_grads_to_none: false keeps every gradient through forward: the head's must not be
    # added a second time. fp32 torch_amp: grads 4 B/param; GPT-2's head is 50257 x 768.
    model = ResolvedModel("gpt2", "decoder", 124_000_000, transformer=GPT2)
    line = ActivationLine(0.0, 2.0**30, "fp32",
                          Source("measured", parts=(detail("measured_median", batch=1, labels="x.json"),)))
    freed = TrainingSetup(global_batch=8, optimizer="adamw", optimizer_impl="fused")
    kept = replace(freed, set_grads_to_none=False)
    opt = option("fp32", 8, 1, 1, 80.0, "8.0")
    a, b = estimate_memory(model, freed, opt, line=line), estimate_memory(model, kept, opt, line=line)
    assert a.phase == b.phase == "backward"
    assert a.grads == 0  # the head's gradient is inside the line
    assert b.grads == pytest.approx(4 * (124_000_000 - 50257 * 768))
    assert b.allocated_peak - a.allocated_peak == pytest.approx(4 * (124_000_000 - 50257 * 768))
    # without a line the analytic activations hold no head gradient: all 4 B x Ψ are counted
    c = estimate_memory(model, kept, opt)
    assert c.grads == pytest.approx(4 * 124_000_000)


def test_fsdp_gathers_a_quantised_bases_root_at_its_own_dtype():
    """A reviewer's case: under QLoRA + FSDP the root unit (embedding, untied LM head) is not quantised, so it is
    gathered at 16 bits, or fp32 after PEFT's upcast; the blocks at nf4's bytes per parameter."""
    model = ResolvedModel("llama2_7b", "decoder", 6_738_415_616, transformer=LLAMA2_7B)
    root = 2 * 32000 * 4096  # untied: embedding + LM head

    def gathered(upcast: bool) -> float:
        adapter = Adapter(kind="qlora", rank=16, targets="all_linear", base_dtype="nf4", kbit_upcast=upcast)
        training = TrainingSetup(global_batch=16, precisions=("bf16",), sharding="zero3", adapter=adapter)
        return fsdp_transient_bytes(model, training, precision="bf16", n_gpus=2, grad_accum=1)

    assert gathered(True) - gathered(False) == pytest.approx((4 - 2) * root, rel=1e-6)
    assert gathered(False) > 2 * root  # the root alone at 16 bits, before any block


def test_fsdp_with_adapters_in_mixed_units_keeps_the_frozen_bases_gradients():
    """training.fsdp_frozen_grads (LitGPT/Fabric: LoRA inside each wrapped block, use_orig_params=True): "the gradient
    memory usage will be ... equivalent to not freezing those parameters" (PyTorch FSDP docs) — sharded, or whole
    under no_sync; only with FSDP and an adapter."""
    from planner.engine.memory import fsdp_frozen_grad_params

    model = ResolvedModel("llama2_7b", "decoder", 6_738_415_616, transformer=LLAMA2_7B)
    lora = Adapter(kind="lora", rank=8, targets="qv")
    base = TrainingSetup(global_batch=64, precisions=("bf16",), state_layout="pure_bf16", sharding="zero3",
                         adapter=lora)
    mixed = replace(base, fsdp_frozen_grads=True)
    trainable = 4_194_304  # r 8 on q and v: 32 x 2 x 8 x (4096 + 4096)
    assert fsdp_frozen_grad_params(model.params, trainable, mixed, 2) == model.params - trainable
    assert fsdp_frozen_grad_params(model.params, trainable, mixed, 1) == 0  # one GPU: no FSDP
    assert fsdp_frozen_grad_params(model.params, trainable, base, 2) == 0
    assert fsdp_frozen_grad_params(model.params, trainable, replace(mixed, adapter=None), 2) == 0
    one_step = option("bf16", 1, 1, 2, 40.0, "8.0")
    with_frozen, without = estimate_memory(model, mixed, one_step), estimate_memory(model, base, one_step)
    (note,) = [n for n in with_frozen.notes if n.key == "fsdp_frozen_grads"]
    assert note.params["grads_gib"] == round(2 * model.params / 2 / GIB, 2)  # the base's bf16 gradients, sharded
    assert with_frozen.total > without.total and not any(n.key == "fsdp_frozen_grads" for n in without.notes)


def test_nf4_keeps_input_is_read_from_the_scenario_and_a_wrong_value_names_the_field():
    from planner.inputs.scenario import load_scenario_text

    base = ("schema: trainplan.scenario/1\nname: q\nmodel: {name: llama2_7b}\n"
            "workload: {dataset_samples: 1000, epochs: 1}\n"
            "training: {global_batch: 8, adapter: {kind: qlora, rank: 8, targets: qv%s}}\n")
    assert load_scenario_text(base % "").training.adapter.nf4_keeps_input is False  # bitsandbytes >= 0.43.2
    assert load_scenario_text(base % ", nf4_keeps_input: true").training.adapter.nf4_keeps_input is True
    with pytest.raises(InputError, match="nf4_keeps_input"):
        load_scenario_text(base % ", nf4_keeps_input: sometimes")


def test_softmax_keeps_input_before_pytorch_1_11_adds_one_score_tensor_to_eager_attention():
    # PyTorch < 1.11 kept softmax's input besides its output (pytorch/pytorch#49600): under AMP the fp32 upcast
    # (4 B per score: 4 + 2 + 4), in fp32 the scores themselves (4 + 4); fused attention keeps no scores at all.
    old = {"softmax_keeps_input": True}
    assert layer_activation_coefficients(GPT2, "fp16", attention="eager", dropout=False)[1] == 6
    assert layer_activation_coefficients(GPT2, "fp16", attention="eager", dropout=False, **old)[1] == 10
    assert layer_activation_coefficients(GPT2, "fp32", attention="eager", dropout=False, **old)[1] == 8
    assert layer_activation_coefficients(GPT2, "bf16", attention="eager", dropout=False, layout="pure_bf16",
                                         **old)[1] == 4
    assert layer_activation_coefficients(GPT2, "fp16", attention="sdpa", dropout=False, **old) == \
        layer_activation_coefficients(GPT2, "fp16", attention="sdpa", dropout=False)
    # the loss's log_softmax under AMP kept the logits' fp32 upcast: + 4·s·b·V; in fp32 the logits are counted
    s, v = GPT2.seq_len, GPT2.vocab
    amp = [transformer_activation_bytes(GPT2, 1, "fp16", attention="sdpa", dropout=False, softmax_keeps_input=k)
           for k in (False, True)]
    assert amp[1] - amp[0] == pytest.approx(4 * s * v)
    fp32 = [transformer_activation_bytes(GPT2, 1, "fp32", attention="sdpa", dropout=False, softmax_keeps_input=k)
            for k in (False, True)]
    assert fp32[1] == fp32[0]


def test_softmax_keeps_input_is_read_from_the_scenario_and_named_in_the_source():
    from planner.inputs.scenario import load_scenario_text

    base = ("schema: trainplan.scenario/1\nname: v\nmodel: {name: vit_b16, attention: eager}\n"
            "workload: {dataset_samples: 1000, epochs: 1}\ntraining: {global_batch: 64%s}\n")
    assert load_scenario_text(base % "").training.softmax_keeps_input is False
    old = load_scenario_text(base % ", softmax_keeps_input: true")
    assert old.training.softmax_keeps_input is True
    with pytest.raises(InputError, match="softmax_keeps_input"):
        load_scenario_text(base % ", softmax_keeps_input: 2")
    model = ResolvedModel("vit_b16", "vit", 86_567_656, transformer=TransformerShape(
        layers=12, hidden=768, heads=12, seq_len=197, vocab=0, mlp="gelu", ffn=3072, dropout=0.0), attention="eager")
    est_new = estimate_memory(model, replace(old.training, softmax_keeps_input=False),
                              option("fp16", 128, 1, 1, 32.0, "7.0"))
    est_old = estimate_memory(model, old.training, option("fp16", 128, 1, 1, 32.0, "7.0"))
    assert est_old.activations - est_new.activations == pytest.approx(4 * 12 * 12 * 197 * 197 * 128)
    assert "softmax input kept (PyTorch < 1.11)" in detail_en(est_old.source)
    assert "softmax input" not in detail_en(est_new.source)


# ---------------------------------------------------------------- LitGPT's stack, as its code keeps tensors

LITGPT_7B = replace(LLAMA7B, seq_len=1304, dropout=0.0, qkv="fused_rope", loss="chunked_fp32")


def test_a_fused_qkv_projection_with_rope_keeps_its_buffer_beside_the_rotated_q_and_k():
    # v is a view of the fused q|k|v output (3t kept) and RoPE makes new q and k (2t): 5t where separate
    # projections keep 3t (Lightning-AI/litgpt@0cc02afa:lit_gpt/model.py#L192-L217)
    separate = replace(LITGPT_7B, qkv="separate")
    for adapter in (None, Adapter("lora", 8, "qv", "bf16", dropout=0.05)):
        for attention in ("sdpa", "flash", "eager"):
            fused = layer_activation_coefficients(LITGPT_7B, "bf16", layout="pure_bf16", attention=attention,
                                                  adapter=adapter)[0]
            plain = layer_activation_coefficients(separate, "bf16", layout="pure_bf16", attention=attention,
                                                  adapter=adapter)[0]
            assert fused - plain == pytest.approx(2 * 2), (adapter, attention)
    # views all round (GPT-2's c_attn) or grouped K/V (copied by the expand): nothing more
    assert layer_activation_coefficients(replace(LITGPT_7B, qkv="fused"), "bf16", layout="pure_bf16")[0] == \
        layer_activation_coefficients(separate, "bf16", layout="pure_bf16")[0]
    gqa = replace(LITGPT_7B, kv_heads=8)
    assert layer_activation_coefficients(gqa, "bf16", layout="pure_bf16")[0] == \
        layer_activation_coefficients(replace(gqa, qkv="separate"), "bf16", layout="pure_bf16")[0]


def test_litgpts_fused_qkv_adapter_drops_once_and_keeps_zero_pads_source():
    # LoRAQKVLinear on q and v, lora_dropout 0.05: one mask and one dropped copy (1 + 2) and index_copy's source,
    # the q and v adapter outputs side by side (2h at 2 B: 4) = 7 B·h, against PEFT's two dropouts 2 x (1 + 2) = 6
    peft = Adapter("lora", 8, "qv", "bf16", dropout=0.05)
    shape = replace(LITGPT_7B, qkv="separate")
    base = layer_activation_coefficients(shape, "bf16", layout="pure_bf16", adapter=peft)[0]
    fused = layer_activation_coefficients(shape, "bf16", layout="pure_bf16", adapter=replace(peft, fused_qkv=True))[0]
    assert fused - base == pytest.approx(7 - 6)
    # without dropout the shared input is kept either way; the zero_pad source still adds the outputs (4)
    no_drop = replace(peft, dropout=0.0)
    assert layer_activation_coefficients(shape, "bf16", layout="pure_bf16", adapter=replace(no_drop, fused_qkv=True))[0] \
        - layer_activation_coefficients(shape, "bf16", layout="pure_bf16", adapter=no_drop)[0] == pytest.approx(4)


def test_a_chunked_head_under_fabric_keeps_fp32_logits_and_a_log_softmax():
    # Fabric's convert_output makes the logits list fp32 (4sV) and each chunk's cross-entropy keeps an fp32
    # log-softmax (4sV): 8sV, against the standard head's 2sV logits + 4sV log-softmax + 4sV transient
    s, v = 1304, 32000
    chunked = transformer_activation_bytes(LITGPT_7B, 1, "bf16", layout="pure_bf16")
    standard = transformer_activation_bytes(replace(LITGPT_7B, loss="standard"), 1, "bf16", layout="pure_bf16")
    assert standard - chunked == pytest.approx((2 + 8 - 8) * s * v)


def test_the_litgpt_knobs_are_read_from_the_scenario():
    from planner.inputs.scenario import load_scenario_text

    text = ("schema: trainplan.scenario/1\nname: q\nmodel: {name: llama2_7b, transformer: {layers: 32, hidden: 4096, "
            "heads: 32, seq_len: 1304, vocab: 32000, mlp: swiglu, ffn: 11008%s}}\n"
            "workload: {dataset_samples: 1000, epochs: 1}\n"
            "training: {global_batch: 8, adapter: {kind: lora, rank: 8, targets: qv%s}}\n")
    plain = load_scenario_text(text % ("", ""))
    assert plain.model.transformer.qkv == "separate" and plain.training.adapter.fused_qkv is False
    lit = load_scenario_text(text % (", qkv: fused_rope, loss: chunked_fp32", ", fused_qkv: true"))
    assert lit.model.transformer.qkv == "fused_rope" and lit.model.transformer.loss == "chunked_fp32"
    assert lit.training.adapter.fused_qkv is True
    with pytest.raises(InputError, match="qkv"):
        load_scenario_text(text % (", qkv: packed", ""))


# ---------------------------------------------------------------- tf32 is fp32 in memory (issue 31)

# Llama-3-8B (meta-llama/Meta-Llama-3-8B config, the zoo's llama3_8b): the plan that showed tf32 5.7 GiB lighter.
LLAMA3_8B = TransformerShape(layers=32, hidden=4096, heads=32, kv_heads=8, seq_len=8192, vocab=128256, mlp="swiglu",
                             ffn=14336, tie_embeddings=False, dropout=0.0, norm="rmsnorm")
# Every sharding each layout accepts (_check_sharding: deepspeed only zero2/zero3, megatron only none/zero1).
LAYOUT_SHARDINGS = [(layout, sharding) for layout in ("torch_amp", "pure_bf16", "zero_paper")
                    for sharding in ("none", "zero1", "zero2", "zero3")] + [
    ("deepspeed", "zero2"), ("deepspeed", "zero3"), ("megatron", "none"), ("megatron", "zero1")]
MEMORY_PARTS = ("weights", "grads", "optimizer", "activations", "transients", "workspace", "context", "nccl",
                "fragmentation", "allocated_peak", "total")


@pytest.mark.parametrize("layout, sharding", LAYOUT_SHARDINGS)
@pytest.mark.parametrize("n_gpus", [1, 8])
def test_tf32_weighs_what_fp32_weighs_part_by_part(layout, sharding, n_gpus):
    # tf32 is an fp32 storage format: only the tensor cores round a matmul's inputs (NVIDIA A100 Tensor Core GPU
    # Architecture whitepaper, "TF32"; torch.backends.cuda.matmul.allow_tf32). Every byte of the plan is fp32's.
    model = ResolvedModel("llama3_8b", "decoder", 8_030_261_248, transformer=LLAMA3_8B)
    training = TrainingSetup(global_batch=64, state_layout=layout, sharding=sharding, activation_checkpointing=True)
    fp32 = estimate_memory(model, training, option("fp32", 1, 2, n_gpus, 80.0, "9.0"))
    tf32 = estimate_memory(model, training, option("tf32", 1, 2, n_gpus, 80.0, "9.0"))
    assert fp32.total > 0
    assert {p: getattr(tf32, p) for p in MEMORY_PARTS} == {p: getattr(fp32, p) for p in MEMORY_PARTS}
    assert tf32.phase == fp32.phase


def test_fragmentation_is_not_charged_on_static_weights():
    """Issue 33: the allocator's fragmentation grows on what it frees and allocates again every step (gradients,
    activations, transients), not on weights and optimizer states allocated once. A 70B QLoRA's ~40 GiB of 4-bit
    weights used to carry 11% more (4.4 GiB), enough to refuse runs that ran on an 80 GB card."""
    shape = TransformerShape(layers=80, hidden=8192, heads=64, seq_len=512, vocab=32000, mlp="swiglu", ffn=28672,
                             kv_heads=8)
    model = ResolvedModel("llama2_70b", "decoder", 68_976_648_192, transformer=shape)
    qlora = TrainingSetup(global_batch=1, activation_checkpointing=True,
                          adapter=Adapter(kind="qlora", rank=16, targets="all_linear", base_dtype="nf4"))
    est = estimate_memory(model, qlora, option("bf16", 1, 1, 1, 80.0, "8.0"))
    assert est.weights > 30 * GIB
    assert est.fragmentation == pytest.approx(RESERVED_OVER_CHURNED * (est.grads + est.activations + est.transients))
    assert est.fragmentation < 0.05 * est.weights
    bigger = estimate_memory(model, qlora, option("bf16", 2, 1, 1, 80.0, "8.0"))
    assert bigger.fragmentation > est.fragmentation, "more activations, more churn, more fragmentation"
