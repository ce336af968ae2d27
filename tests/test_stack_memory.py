"""What the stack keeps (issue 33, docs/methods.md#memory): per-stack activation rules of
planner/engine/memory_activations.py, each against the formula it departs from."""

from __future__ import annotations

import pytest

from calibration import memory_report
from planner.engine import memory_activations as ma
from planner.engine.estimates import ResolvedModel
from planner.inputs.scenario import Adapter, TransformerShape

GPT2_MEDIUM = TransformerShape(layers=24, hidden=1024, heads=16, seq_len=1024, vocab=50304, mlp="gelu", ffn=4096,
                               tie_embeddings=True, dropout=0.0, qkv="fused")
LLAMA3_8B = TransformerShape(layers=32, hidden=4096, heads=32, kv_heads=8, seq_len=8192, vocab=128256, mlp="swiglu",
                             ffn=14336, tie_embeddings=False, dropout=0.0, loss="chunked")
QLORA = Adapter(kind="qlora", rank=32, targets="all_linear", base_dtype="nf4_dq", dropout=0.0, kbit_upcast=False)


def test_llm_c_fused_classifier_keeps_one_16_bit_logits_buffer():
    # llm.c's fused_classifier: the bf16 logits buffer, overwritten by its gradient; no fp32 log-softmax, no
    # separate gradient: 8·s·b·V bytes fewer than the standard loss's 2 + 4 + 4.
    b, s, v = 64, GPT2_MEDIUM.seq_len, GPT2_MEDIUM.vocab
    eager = ma.transformer_activation_bytes(GPT2_MEDIUM, b, "bf16", attention="flash", layout="pure_bf16",
                                            stack="pytorch_eager")
    fused = ma.transformer_activation_bytes(GPT2_MEDIUM, b, "bf16", attention="flash", layout="pure_bf16",
                                            stack="hand_fused")
    assert eager - fused == pytest.approx(2 * ma.logits_loss_bytes(s, b, v))
    head = ma.head_activation_bytes(GPT2_MEDIUM, b, "bf16", layout="pure_bf16", fused_classifier=True)
    assert head == pytest.approx((2 + 2) * s * b * GPT2_MEDIUM.hidden + 2 * s * b * v)  # lnf + head input, logits


@pytest.mark.parametrize("loss", ["chunked", "sequence", "chunked_fp32"])
def test_the_fused_classifier_replaces_only_the_standard_loss(loss):
    shape = TransformerShape(**{**GPT2_MEDIUM.__dict__, "loss": loss})
    args = dict(attention="flash", layout="pure_bf16")
    assert ma.transformer_activation_bytes(shape, 4, "bf16", stack="hand_fused", **args) == \
        ma.transformer_activation_bytes(shape, 4, "bf16", stack="pytorch_eager", **args)


def test_offloaded_checkpoints_leave_one_block_input_on_the_gpu():
    # Unsloth's offloaded checkpointing: L block inputs to CPU RAM, one copied back for its recomputation.
    args = dict(attention="flash", checkpointing=True, layout="pure_bf16", adapter=QLORA)
    kept = ma.transformer_activation_bytes(LLAMA3_8B, 1, "bf16", **args)
    offloaded = ma.transformer_activation_bytes(LLAMA3_8B, 1, "bf16", checkpoint_offload=True, **args)
    block_input = 2 * LLAMA3_8B.seq_len * LLAMA3_8B.hidden  # bf16 residual stream
    assert kept - offloaded == pytest.approx((LLAMA3_8B.layers - 1) * block_input)


def test_offload_without_checkpointing_changes_nothing():
    args = dict(attention="flash", layout="pure_bf16", adapter=QLORA)
    assert ma.transformer_activation_bytes(LLAMA3_8B, 1, "bf16", checkpoint_offload=True, **args) == \
        ma.transformer_activation_bytes(LLAMA3_8B, 1, "bf16", **args)


@pytest.mark.parametrize(("stack", "family", "precision", "cc", "expected"), [
    ("hf_trainer_fa2", "decoder", "bf16", "8.0", "flash"),
    ("hf_trainer_fa2", "encoder", "fp16", "8.9", "flash"),
    ("hf_trainer_fa2", "vit", "bf16", "8.0", "sdpa"),  # transformers has no FA2 ViT
    ("hf_trainer_fa2", "decoder", "fp32", "8.0", "sdpa"),  # FA2 is 16-bit only
    ("hf_trainer_fa2", "decoder", "fp16", "7.5", "sdpa"),  # and sm80+ only
    ("fused_kernels", "decoder", "bf16", "9.0", "flash"),
    ("hand_fused", "decoder", "bf16", "8.0", "flash"),
    ("hf_trainer_sdpa", "decoder", "bf16", "8.0", "sdpa"),
    ("megatron", "decoder", "bf16", "8.0", "sdpa"),  # TransformerEngine not read yet: SDPA keeps more
    ("pytorch_eager", "vit", "fp16", "8.6", "sdpa"),  # timm >= 0.9, torchvision on PyTorch 2: fused SDPA
    ("torch_compile", "vit", "bf16", "8.0", "sdpa"),
    (None, "decoder", "bf16", "8.0", "sdpa"),
])
def test_the_default_attention_follows_the_stack(stack, family, precision, cc, expected):
    attention, _ = ma.resolve_attention(None, family=family, precision=precision, compute_capability=cc, stack=stack)
    assert attention == expected


def test_a_named_attention_wins_over_the_stack():
    attention, why = ma.resolve_attention("eager", family="vit", precision="bf16", compute_capability="8.0",
                                          stack="hand_fused")
    assert (attention, why) == ("eager", "model.attention")


def test_the_plan_says_which_stack_rule_it_used():
    model = ResolvedModel(name="gpt2_medium", family="decoder", params=355_000_000, transformer=GPT2_MEDIUM)
    _, source = ma.activation_bytes(model, "bf16", 8, layout="pure_bf16", attention="flash", stack="hand_fused")
    assert "fused_classifier_loss" in repr(source)
    _, source = ma.activation_bytes(model, "bf16", 8, layout="pure_bf16", attention="flash", stack="hand_fused",
                                    checkpointing=True, checkpoint_offload=True)
    assert "checkpoint_offload" in repr(source)


def _llm_c_activation_bytes(layers: int, channels: int, heads: int, batch: int, seq: int, padded_vocab: int) -> int:
    """llm.c's own activation allocation at -r 0 with cuDNN and bf16 (floatX): fill_in_activation_sizes,
    karpathy/llm.c@f1e2ace6:train_gpt2.cu#L219-L254, tensor by tensor (21 tensors, fp32 statistics)."""
    L, C, NH, B, T, Vp = layers, channels, heads, batch, seq, padded_vocab
    bf16 = (B * T * C  # encoded
            + L * B * T * C * (1 + 1 + 1 + 1 + 4 + 4 + 1 + 3)  # ln1, atty, residual2, ln2, fch, fch_gelu, residual3, qkvr
            + B * T * C  # lnf
            + B * T * max(3 * C, NH * T, Vp)  # output: the logits, then their gradient
            + B * T * 4 * C + B * T * C)  # scratch_bt4c, scratch_btc
    fp32 = (4 * L * B * T  # ln1_mean, ln1_rstd, ln2_mean, ln2_rstd
            + L * B * NH * T  # att: cuDNN's statistics
            + 2 * B * T + B * T)  # lnf_mean, lnf_rstd, losses
    return 2 * bf16 + 4 * fp32


@pytest.mark.parametrize(("layers", "hidden", "heads", "batch"), [(12, 768, 12, 64), (24, 1024, 16, 64),
                                                                  (36, 1280, 20, 32)])
def test_hand_fused_activations_are_llm_c_s_own_allocation(layers, hidden, heads, batch):
    # The published runs (scripts/run_gpt2_124M/350M/774M.sh: -b 64/64/32 -t 1024 -r 0) checked against what llm.c
    # itself allocates for them: the formula with the fused classifier within 3% (it leaves out the scratch buffers);
    # with the standard loss's 10 sbV it would be 24-97% over (the logits weigh most where the model is small).
    shape = TransformerShape(layers=layers, hidden=hidden, heads=heads, seq_len=1024, vocab=50304, mlp="gelu",
                             ffn=4 * hidden, tie_embeddings=True, dropout=0.0, qkv="fused")
    llm_c = _llm_c_activation_bytes(layers, hidden, heads, batch, 1024, 50304)
    planned = ma.transformer_activation_bytes(shape, batch, "bf16", attention="flash", layout="zero_paper",
                                              stack="hand_fused")
    assert planned == pytest.approx(llm_c, rel=0.03)
    eager = ma.transformer_activation_bytes(shape, batch, "bf16", attention="flash", layout="zero_paper")
    assert eager > 1.2 * llm_c


def test_fused_kernels_keep_the_rmsnorm_input_and_the_swiglu_gate_and_up():
    # Trainable block, 16-bit: eager keeps 2(4 + 2) for the norms and 2(1 + 4f/h) for the MLP; the fused kernels
    # 2·2 (inputs only) and 2(1 + 3f/h) (SiLU's output recomputed): 8 + 2f/h bytes per s·b·h fewer.
    shape = TransformerShape(**{**LLAMA3_8B.__dict__, "loss": "standard"})
    f_over_h = shape.ffn_width / shape.hidden
    eager, _, _ = ma.layer_activation_coefficients(shape, "bf16", attention="flash", layout="pure_bf16")
    fused, _, _ = ma.layer_activation_coefficients(shape, "bf16", attention="flash", layout="pure_bf16",
                                                   fused_norm_mlp=True)
    assert eager - fused == pytest.approx(8 + 2 * f_over_h)
    # Frozen (QLoRA): eager keeps the norms' fp32 upcasts (2·4) and gate, SiLU and up outputs (3f/h·2); fused the
    # norms' 16-bit inputs (2·2) and gate and up (2f/h·2): 4 + 2f/h fewer.
    eager_q, _, _ = ma.layer_activation_coefficients(shape, "bf16", attention="flash", layout="pure_bf16",
                                                     adapter=QLORA)
    fused_q, _, _ = ma.layer_activation_coefficients(shape, "bf16", attention="flash", layout="pure_bf16",
                                                     adapter=QLORA, fused_norm_mlp=True)
    assert eager_q - fused_q == pytest.approx(4 + 2 * f_over_h)


def test_fused_kernels_leave_a_gelu_layernorm_model_as_it_was():
    args = dict(attention="flash", layout="pure_bf16")
    assert ma.transformer_activation_bytes(GPT2_MEDIUM, 4, "bf16", stack="fused_kernels", **args) == \
        ma.transformer_activation_bytes(GPT2_MEDIUM, 4, "bf16", stack="pytorch_eager", **args)


def test_unsloth_s_longest_contexts_plan_at_the_edge_of_their_cards():
    """Unsloth's README table (e3162dc5 L357-L375): the longest context that trained on each card. With the
    offloaded checkpoints and the fused kernels the plan puts each at 95-100% of the card: it fits, at the edge,
    where the published run was the longest that fit (no constant fitted to these rows)."""
    results = [r for r in memory_report.run() if "-qlora-unsloth-" in r.case]
    assert len(results) == 7
    for r in results:
        assert 0.95 * r.estimate.capacity <= r.estimate.total <= r.estimate.capacity, r.case
