"""Activation memory per GPU (docs/methods.md#memory): transformer formulas, measured/traced lines, user figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.engine.estimates import ActivationLine, ResolvedModel, Source, detail, piece
from planner.engine.notes import Note
from planner.inputs.errors import CannotEstimate, InputError
from planner.vocab import (
    GROUP_ELEMENT_BYTES,
    HALF_PRECISIONS,
    MODEL_ATTENTIONS,
    PRECISIONS,
    QUANTIZED_BASE_DTYPES,
    STATE_LAYOUTS,
    precision_group,
)

if TYPE_CHECKING:
    from planner.inputs.scenario import Adapter, TransformerShape

ATTENTIONS = MODEL_ATTENTIONS  # eager (softmax(QK^T)V) | sdpa (PyTorch's fused SDPA) | flash (FlashAttention-2)

# Element bytes of an fp32 and a 16-bit tensor (planner.vocab owns them), for tensors whose dtype the kernel fixes
# whatever the training precision (fp32 statistics, upcasts) and for the 16-bit copies autocast saves.
FP32_BYTES = GROUP_ELEMENT_BYTES["fp32"]
HALF_BYTES = GROUP_ELEMENT_BYTES["16-bit"]
MASK_BYTES = 1  # dropout masks are torch.bool on CUDA (Korthikanti et al. 2022 §4.1: "1 byte")
LOGSUMEXP_BYTES = FP32_BYTES  # flash / memory-efficient SDPA keep an fp32 logsumexp per head and token for backward
LOG_SOFTMAX_BYTES = FP32_BYTES  # cross_entropy runs in fp32 (autocast fp32 op list): saved log-softmax, 4 B per logit
# PyTorch before 1.11 kept softmax's and log_softmax's INPUT for backward besides the output, though the backward
# reads only the output (pytorch/pytorch#49600; removed by #65242, relanded as #66018 on 2021-10-01: first in 1.11):
# training.softmax_keeps_input. Under AMP that input is softmax's fp32 upcast (4 B per score), else the scores' own
# dtype; the loss's log_softmax under AMP keeps the logits' fp32 upcast (4 B per logit).
# RMSNorm as Hugging Face (LlamaRMSNorm), LitGPT and torchtitan write it: the input is upcast to fp32, which pow
# and mul save (4 B per element), and the normalised tensor is saved by the weight multiply (residual dtype).
# A fused LayerNorm saves only its input (and per-row statistics).
RMSNORM_FP32_INPUT_BYTES = FP32_BYTES
# Dropout in the analytic fallback when the shape does not say: GPT-2/BERT train with it; for dropout-free LLMs it
# overstates by 2sbh of ~36sbh per layer (≈5%), the conservative side of a fit check. Zoo and corpus shapes say.
ASSUME_DROPOUT = True
# Fraction of activations kept under checkpointing when no transformer shape says better: Chen et al. 2016
# ("Training Deep Nets with Sublinear Memory Cost", arXiv:1604.06174) keep ≈ 2/√n of n blocks' activations
# with √n segments; 0.5 is n = 16 (ResNet-50's bottlenecks) and conservative for deeper nets.
CHECKPOINTED_ACTIVATION_FRACTION = 0.5
# Per-element bytes used to rescale a user figure between precisions. Under torch AMP LayerNorm/softmax inputs
# stay fp32, so 16-bit activations are ≈ 38/66 of fp32 ones (Korthikanti coefficients below), not 1/2.
FP32_ACTIVATION_ELEMENT_BYTES = float(FP32_BYTES)
HALF_ACTIVATION_ELEMENT_BYTES = float(HALF_BYTES)
AMP_ACTIVATION_ELEMENT_BYTES = FP32_ACTIVATION_ELEMENT_BYTES * 38 / 66
# FlashAttention-2 runs fp16/bf16 only, on sm80 and newer (Dao 2023, "FlashAttention-2", README requirements:
# Ampere, Ada or Hopper); asking for `flash` elsewhere is refused.
FLASH_MIN_CAPABILITY = 8.0

# What the stack keeps (docs/methods.md#what-the-stack-keeps): where a software stack's own kernels keep
# other tensors than the formula's reading of eager PyTorch. Keyed by planner.vocab.SOFTWARE_STACKS; a stack not
# named here keeps what the formula counts.
# The attention kernel a stack runs when the scenario's model.attention does not say, per model family: the stacks
# that call FlashAttention-2 (or cuDNN's flash kernel) directly keep K/V at kv_heads and no s x s scores. Every other
# stack runs PyTorch's fused SDPA (resolve_attention's default). Why each:
# - hf_trainer_fa2: transformers' attn_implementation="flash_attention_2" exists for decoders and encoders, not ViT
#   (ViT gained SDPA, not FA2), so a ViT on that stack runs SDPA;
# - fused_kernels (Unsloth, Liger Kernel, fms-acceleration): decoder LLM fine-tuning on FlashAttention-2 (Unsloth's
#   README context-length table: "Unsloth ... FA2"; calibration/published/sources/unsloth-readme-context-length.yaml);
# - hand_fused (llm.c): cuDNN flash attention, saving an fp32 statistic per head and token
#   (karpathy/llm.c@f1e2ace6:train_gpt2.cu#L177-L181, "cuDNN saves only some statistics information").
# Megatron (TransformerEngine's fused attention) is left at SDPA until its attention backend is read at a pinned
# commit: SDPA's repeated K/V keep more, the conservative side.
FLASH_DEFAULT_STACKS: dict[str, tuple[str, ...]] = {
    "hf_trainer_fa2": ("decoder", "encoder"), "fused_kernels": ("decoder", "encoder"),
    "hand_fused": ("decoder", "encoder", "vit")}
# Stacks whose cross-entropy is one fused classifier kernel: llm.c's fused_classifier computes the loss and writes the
# logits' gradient in place into the one 16-bit logits buffer (B x T x Vp, `output`), never materialising the
# log-softmax (karpathy/llm.c@f1e2ace6:llmc/fused_classifier.cuh#L1-L5; train_gpt2.cu#L238 sizes `output` as
# B*T*max(3C, NH*T, Vp) floatX, #L778 calls it): a `loss: standard` head keeps t·sbV, not the logits, fp32
# log-softmax and its gradient (10 sbV at 16-bit).
FUSED_CLASSIFIER_STACKS: tuple[str, ...] = ("hand_fused",)
# Stacks whose RMSNorm and SwiGLU are fused Triton kernels (Unsloth, Liger Kernel, fms-acceleration's fused ops, which
# are Unsloth's): the RMSNorm kernel keeps only its input and an fp32 rstd per row (unslothai/unsloth@e3162dc5:
# unsloth/kernels/rms_layernorm.py#L169 `ctx.save_for_backward(X, W, r)`; linkedin/Liger-Kernel@43c5fe1b:
# src/liger_kernel/ops/rms_norm.py LigerRMSNormFunction), not the fp32 upcast and the normalised output, and the
# SwiGLU kernel keeps the gate and up outputs and recomputes SiLU in backward (linkedin/Liger-Kernel@3baaa6bb:
# src/liger_kernel/ops/swiglu.py LigerSiLUMulFunction `ctx.save_for_backward(a, b)`, "recomputation to save
# memory"; Unsloth's LoRA_MLP keeps X, e, g: unsloth/kernels/fast_lora.py#L86-L87), not SiLU's output.
FUSED_NORM_MLP_STACKS: tuple[str, ...] = ("fused_kernels",)


def _check(value: str, allowed: tuple[str, ...], field: str) -> None:
    if value not in allowed:
        raise InputError(None, field, value, "one of " + ", ".join(allowed))


def resolve_attention(requested: str | None, *, family: str, precision: str,
                      compute_capability: str | None, stack: str | None = None) -> tuple[str, Note | str]:
    """(attention, why): the scenario's model.attention, else what the stack runs (FLASH_DEFAULT_STACKS), else sdpa.

    The default is what the common stacks run for ViT, encoders and decoders alike: PyTorch's fused
    scaled_dot_product_attention (Hugging Face ≥ 4.36's `attn_implementation` default, LitGPT, torchtitan, timm,
    the zoo), which picks its flash kernel for fp16/bf16 on sm80+ and the memory-efficient one otherwise — no s×s
    scores either way — after the caller repeats grouped K/V to every head (Hugging Face's repeat_kv, LitGPT's
    expand). `flash` (FlashAttention-2 called directly, K/V kept at kv_heads) needs fp16/bf16 on sm80+; eager
    attention (2021-era BERT, timm < 0.9 ViT, PyTorch 1.x) must be asked for: the stack vocabulary has no version,
    and the current releases of every stack run a fused kernel (timm >= 0.9 `fused_attn`, torchvision's
    nn.MultiheadAttention with need_weights=False on PyTorch 2; rasbt's plain-PyTorch ViT-L/16 rows measure it).
    A stack that calls FlashAttention-2 directly (FLASH_DEFAULT_STACKS) runs `flash` where the GPU and precision
    allow it, else SDPA.
    """
    if requested is None and family in FLASH_DEFAULT_STACKS.get(stack or "", ()) and \
            precision in HALF_PRECISIONS and _capability(compute_capability) >= FLASH_MIN_CAPABILITY:
        return "flash", piece("stack_flash_default", stack=str(stack), family=family)
    if requested is None:
        kernel = "flash" if precision in HALF_PRECISIONS and _capability(compute_capability) >= FLASH_MIN_CAPABILITY \
            else "memory-efficient"
        return "sdpa", piece("sdpa_default", kernel=kernel, family=family)
    _check(requested, ATTENTIONS, "model.attention")
    if requested == "flash" and (precision not in HALF_PRECISIONS
                                 or _capability(compute_capability) < FLASH_MIN_CAPABILITY):
        # FlashAttention-2 cannot run here: the fused SDPA path is what would.
        return "sdpa", piece("flash_unsupported", precision=precision, cc=str(compute_capability))
    return requested, "model.attention"


def _capability(compute_capability: str | None) -> float:
    try:
        return float(str(compute_capability)) if compute_capability is not None else 0.0
    except ValueError:
        return 0.0


def shape_dropout(shape: TransformerShape) -> bool:
    """Whether the shape trains with dropout masks: its `dropout` > 0, assumed when it does not say."""
    return ASSUME_DROPOUT if shape.dropout is None else shape.dropout > 0


def _mask_bytes(shape: TransformerShape, dropout: bool | None) -> int:
    """The dropout mask byte per element (0 without dropout); `dropout` None: the shape's own (shape_dropout)."""
    return MASK_BYTES if (shape_dropout(shape) if dropout is None else dropout) else 0


def _norm_bytes(shape: TransformerShape, r: int, *, frozen: bool = False, fused: bool = False) -> int:
    """Bytes per element one norm keeps for backward: LayerNorm its input (r); RMSNorm its fp32 upcast, plus the
    normalised output the weight multiply keeps (r) unless the weight is frozen; a fused RMSNorm kernel
    (FUSED_NORM_MLP_STACKS) its input (r), trainable or frozen (the fp32 rstd per row is 4/h per element)."""
    if shape.norm_kind == "layernorm" or fused:
        return r
    return RMSNORM_FP32_INPUT_BYTES + (0 if frozen else r)


def activation_kind(precision: str, layout: str) -> str:
    """'fp32' (fp32/tf32 tensors), 'amp' (torch autocast: 16-bit matmuls, fp32 residual/LN/softmax), 'half'."""
    _check(precision, PRECISIONS, "precision")
    _check(layout, STATE_LAYOUTS, "training.state_layout")
    if precision_group(precision) == "fp32":
        return "fp32"
    return "amp" if layout == "torch_amp" else "half"


def _tensor_bytes(kind: str) -> int:
    """Bytes of a matmul's saved output: fp32 tensors stay fp32, autocast's and 16-bit training's are 16-bit."""
    return FP32_BYTES if kind == "fp32" else HALF_BYTES


def _residual_bytes(kind: str) -> int:
    # Under autocast the fp32 parameters make the residual stream (and so LayerNorm inputs) fp32.
    return HALF_BYTES if kind == "half" else FP32_BYTES


def mlp_activation_coefficient(shape: TransformerShape, tensor_bytes: int, *, fused: bool = False) -> float:
    """MLP bytes per s·b·h without dropout mask (Korthikanti §4.1: 18 at 16-bit for the 4h GeLU MLP).

    GeLU, width f: input of the first linear (t·sbh) + GeLU input and output (2·t·sbf) = t(1 + 2f/h).
    SwiGLU, width f (derived here): the shared input of gate and up projections (t·sbh); SiLU saves its input,
    the gate output (t·sbf); the product saves both factors, SiLU output and up output (2·t·sbf); the down
    projection saves its input, the product (t·sbf): t(1 + 4f/h), i.e. 2 + 8f/h at 16-bit (docs/methods.md#memory).
    A fused SwiGLU kernel (`fused`, FUSED_NORM_MLP_STACKS) keeps gate and up outputs and recomputes SiLU: t(1 + 3f/h).
    """
    f_over_h = shape.ffn_width / shape.hidden
    wide_tensors = (3 if fused else 4) if shape.mlp == "swiglu" else 2
    return tensor_bytes * (1 + wide_tensors * f_over_h)


def layer_activation_coefficients(shape: TransformerShape, precision: str, *, attention: str = "sdpa",
                                  dropout: bool | None = None, layout: str = "torch_amp",
                                  adapter: Adapter | None = None, softmax_keeps_input: bool = False,
                                  fused_norm_mlp: bool = False) -> tuple[float, float, float]:
    """(c_sbh, c_as2b, c_asb): one block keeps c_sbh·s·b·h + c_as2b·a·s²·b + c_asb·a·s·b bytes.

    Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", §4.1, eq. 1):
    s·b·h·(34 + 5as/h) at 16-bit with dropout, unfused attention. Term by term, with t the matmul-input bytes,
    r the residual/LayerNorm-input bytes and m the mask byte (0 without dropout; `dropout` None: the shape's):
    norm inputs 2r (RMSNorm: 2(4 + r), its fp32 upcast and normalised output); attention QKV input, Q, K, V and
    projection input 5t (FlashAttention keeps grouped K and V at kv_heads: (3 + 2·kv/a)t; eager and SDPA run on
    K and V repeated to all heads, Hugging Face's repeat_kv) + output-dropout mask m; MLP
    (mlp_activation_coefficient) + m. Scores (eager attention): softmax output t, + with dropout its mask and
    output (1 + t); under AMP softmax runs in fp32 (4) and the PV matmul saves a 16-bit copy (2), + mask.
    SDPA/flash store no s² tensor, only an fp32 logsumexp (4·a·s·b) and regenerate dropout from its RNG state.
    `softmax_keeps_input` (PyTorch < 1.11): eager softmax also keeps its input, 4 under AMP (the fp32 upcast), else t.
    Results (checked in tests): 16-bit 34 + 5as/h / 32 + 2as/h, fp32 66 + 9as/h / 64 + 4as/h, AMP 38 + 7as/h /
    36 + 6as/h; SDPA 34/32, 66/64, 38/36. With an adapter the base is frozen: see frozen_block_coefficient.
    A fused projection with RoPE (`qkv: fused_rope`) keeps 2t more: fused_qkv_extra. `fused_norm_mlp`
    (FUSED_NORM_MLP_STACKS): fused RMSNorm and SwiGLU kernels (_norm_bytes, mlp_activation_coefficient).
    """
    _check(attention, ATTENTIONS, "model.attention")
    kind = activation_kind(precision, layout)
    t, r = _tensor_bytes(kind), _residual_bytes(kind)
    m = _mask_bytes(shape, dropout)
    if adapter is not None:
        c_sbh = frozen_block_coefficient(shape, t=t, r=r, m=m, attention=attention, adapter=adapter,
                                         fused_norm_mlp=fused_norm_mlp)
    else:
        norms = 2 * _norm_bytes(shape, r, fused=fused_norm_mlp)
        kv = shape.kv_head_count / shape.heads if attention == "flash" else 1.0
        c_sbh = norms + ((3 + 2 * kv) * t + m) + (mlp_activation_coefficient(shape, t, fused=fused_norm_mlp) + m)
        c_sbh += fused_qkv_extra(shape) * t
    if attention != "eager":
        return c_sbh, 0.0, float(LOGSUMEXP_BYTES)
    if kind == "amp":
        c_scores = FP32_BYTES + HALF_BYTES + m
    else:
        c_scores = t + (MASK_BYTES + t if m else 0)
    if softmax_keeps_input:
        c_scores += FP32_BYTES if kind == "amp" else t
    return c_sbh, float(c_scores), 0.0


def fused_qkv_extra(shape: TransformerShape) -> float:
    """Tensors of s·b·h (units of t) attention keeps beyond Q, K, V when q, k and v come out of one fused projection
    and RoPE makes new q and k (`qkv: fused_rope`): v, a strided view of the fused q|k|v output, keeps that whole
    buffer (3) alive besides the rotated q and k (2), against the 3 of separate projections: +2. With grouped K/V
    (kv_heads < heads) k and v are expanded and copied, so no view keeps the buffer: 0. Read in LitGPT
    (Lightning-AI/litgpt@0cc02afa:lit_gpt/model.py#L192-L217: view, permute, split, reshape; apply_rope and cat) and
    checked on CPU with saved_tensors_hooks (SDPA saves v as passed)."""
    if shape.qkv != "fused_rope" or shape.kv_head_count != shape.heads:
        return 0.0
    return 2.0


def frozen_block_coefficient(shape: TransformerShape, *, t: int, r: int, m: int, attention: str,
                             adapter: Adapter, fused_norm_mlp: bool = False) -> float:
    """Bytes per s·b·h one block keeps for backward when its base weights are frozen (LoRA/QLoRA).

    Autograd saves what the gradient of something trainable needs (checked with saved_tensors_hooks: a frozen
    nn.Linear saves no input): a frozen linear keeps no input and a frozen norm no normalised output; the
    attention kernel still keeps Q, K, V (flash: at kv_heads) and its output (not eager's), the activation
    function its input (GeLU f/h; SwiGLU gate, SiLU and up outputs, 3f/h). bitsandbytes' 8-bit matmul
    (MatMul8bitLt) saves its input whatever needs a gradient, and so did its 4-bit one before 0.43.2
    (quantized_base_keeps_inputs): such a base keeps the linear inputs after all. Adapters add their input: once
    when lora_dropout is 0 (the shared tensor), else a mask and a dropped copy per adapted matrix (PEFT's per-layer
    nn.Dropout) instead of the input itself (checked: with p > 0 the undropped input is not kept by the adapter). LitGPT's fused adapter for q, k and v
    (`adapter.fused_qkv`, LoRAQKVLinear) drops their shared input once, and zero_pad's index_copy keeps its
    source, the adapted outputs side by side ((h + kv width) for q and v: Lightning-AI/litgpt@0cc02afa:
    lit_gpt/lora.py#L290-L296; IndexCopyBackward0 saves `source` since pytorch/pytorch#52203).
    `fused_norm_mlp` (FUSED_NORM_MLP_STACKS): a fused RMSNorm keeps its input (r), a fused SwiGLU the gate and up
    outputs (2f/h, not SiLU's output); the adapters' inputs are kept as above.
    """
    f_over_h = shape.ffn_width / shape.hidden
    norms = 2 * _norm_bytes(shape, r, frozen=True, fused=fused_norm_mlp)
    kv = shape.kv_head_count / shape.heads if attention == "flash" else 1.0
    attention_saved = (1 + 2 * kv) * t + (0 if attention == "eager" else t) + m + fused_qkv_extra(shape) * t
    mlp_saved = ((2 if fused_norm_mlp else 3) if shape.mlp == "swiglu" else 1) * f_over_h * t + m
    # The matmul inputs: attention input, projection input, MLP input, down-projection input (in units of sbh).
    inputs = {"qkv": 1.0, "o": 1.0, "mlp": 1.0, "down": f_over_h}
    # Adapted matrices per input: q, k, v share the attention input; gate and up (SwiGLU) the MLP input.
    adapted = {"qv": {"qkv": 2}, "attention": {"qkv": 3, "o": 1},
               "all_linear": {"qkv": 3, "o": 1, "mlp": 2 if shape.mlp == "swiglu" else 1, "down": 1}}[adapter.targets]
    if quantized_base_keeps_inputs(adapter):  # bitsandbytes keeps every linear's input
        kept = dict(inputs)
    elif adapter.dropout > 0:  # the adapters keep their dropped copies (below), not the input
        kept = {}
    else:
        kept = {k: inputs[k] for k in adapted}
    if attention != "eager":
        kept.pop("o", None)  # the attention kernel's saved output is the projection input
    lora = sum(kept.values()) * t
    drops = dict(adapted)
    if adapter.fused_qkv and "qkv" in adapted:
        drops["qkv"] = 1  # one lora_dropout for the fused q|k|v adapter
        kv_width = shape.kv_head_count / shape.heads
        widths = {"qv": 1 + kv_width, "attention": 1 + 2 * kv_width, "all_linear": 1 + 2 * kv_width}
        lora += widths[adapter.targets] * t  # zero_pad's index_copy source: the adapted outputs
    if adapter.dropout > 0:  # a mask and a dropped copy per dropout
        lora += sum(n * inputs[k] * (MASK_BYTES + t) for k, n in drops.items())
    return norms + attention_saved + mlp_saved + lora


def quantized_base_keeps_inputs(adapter: Adapter) -> bool:
    """Whether the frozen base's quantised linears keep their input for backward: bitsandbytes' MatMul8bitLt does
    (int8, every version); MatMul4Bit did before 0.43.2 (`adapter.nf4_keeps_input`; bitsandbytes@9e753741,
    #1270: bitsandbytes/autograd/_functions.py ctx.tensors = (A, B) -> (None, B)). A 16-bit base does not."""
    if adapter.base_dtype == "int8":
        return True
    return adapter.base_dtype in QUANTIZED_BASE_DTYPES and adapter.nf4_keeps_input


def layer_activation_bytes(shape: TransformerShape, micro_batch: int, precision: str, *, attention: str = "sdpa",
                           dropout: bool | None = None, layout: str = "torch_amp",
                           adapter: Adapter | None = None, softmax_keeps_input: bool = False,
                           fused_norm_mlp: bool = False) -> float:
    """Bytes one transformer block keeps for backward (Korthikanti et al. 2022 eq. 1 and variants)."""
    c_sbh, c_as2b, c_asb = layer_activation_coefficients(shape, precision, attention=attention, dropout=dropout,
                                                         layout=layout, adapter=adapter,
                                                         softmax_keeps_input=softmax_keeps_input,
                                                         fused_norm_mlp=fused_norm_mlp)
    s, b, h, a = shape.seq_len, micro_batch, shape.hidden, shape.heads
    return c_sbh * s * b * h + c_as2b * a * s * s * b + c_asb * a * s * b


def logits_loss_bytes(seq_len: int, micro_batch: int, vocab: int) -> float:
    """fp32 log-softmax kept by the loss for backward: 4·s·b·V (docs/methods.md#memory; GPT-2 ≈ 206 MB/sample)."""
    return LOG_SOFTMAX_BYTES * seq_len * micro_batch * vocab


def head_activation_bytes(shape: TransformerShape, micro_batch: int, precision: str, *, dropout: bool | None = None,
                          layout: str = "torch_amp", adapter: Adapter | None = None,
                          softmax_keeps_input: bool = False, fused_classifier: bool = False,
                          fused_norm: bool = False) -> float:
    """Embedding dropout mask, final norm input, LM-head input and the logits/loss tensors.

    Logits (docs/methods.md#memory): the model's logits (t·sbV, kept by the training loop that returned them), the
    fp32 log-softmax 4sbV, and a backward transient of the same size (its gradient) at the start of backward.
    LitGPT's chunked head under Fabric (`loss: chunked_fp32`) keeps every chunk's logits in fp32 (4sbV, Fabric's
    convert_output) and an fp32 log-softmax per chunk (4sbV), whose gradients replace them chunk by chunk: 8sbV.
    A chunked or fused cross-entropy (`loss: chunked`) never holds the whole logits, and a sequence-level head
    (`loss: sequence`: classification) has none: only the head input counts. A frozen head (adapters: the head
    stays a 16-bit nn.Linear) keeps no input, and a frozen final norm no normalised output. Before PyTorch 1.11
    (`softmax_keeps_input`) log_softmax kept its input too: under AMP the logits' fp32 upcast (4sbV); otherwise the
    logits themselves, already counted. A fused classifier (`fused_classifier`, FUSED_CLASSIFIER_STACKS: llm.c)
    turns a `loss: standard` head into one t·sbV logits buffer that its gradient overwrites in place.
    """
    kind = activation_kind(precision, layout)
    t, r = _tensor_bytes(kind), _residual_bytes(kind)
    m = _mask_bytes(shape, dropout)
    norm = _norm_bytes(shape, r, frozen=adapter is not None, fused=fused_norm)
    if adapter is not None:
        t_head = 0
    else:
        t_head = t
    sb = shape.seq_len * micro_batch
    logits = 0.0
    if shape.loss == "chunked_fp32":  # every chunk's fp32 logits kept by the loop + an fp32 log-softmax per chunk
        logits = FP32_ACTIVATION_ELEMENT_BYTES * sb * shape.vocab + logits_loss_bytes(shape.seq_len, micro_batch,
                                                                                        shape.vocab)
    if shape.loss == "standard" and fused_classifier:
        logits = t * sb * shape.vocab
    elif shape.loss == "standard":
        logits = t * sb * shape.vocab + 2 * logits_loss_bytes(shape.seq_len, micro_batch, shape.vocab)
        if softmax_keeps_input and kind == "amp":
            logits += logits_loss_bytes(shape.seq_len, micro_batch, shape.vocab)
    return (m + norm + t_head) * sb * shape.hidden + logits


def transformer_activation_bytes(shape: TransformerShape, micro_batch: int, precision: str, *,
                                 attention: str = "sdpa", dropout: bool | None = None, checkpointing: bool = False,
                                 layout: str = "torch_amp", adapter: Adapter | None = None,
                                 softmax_keeps_input: bool = False, stack: str | None = None,
                                 checkpoint_offload: bool = False) -> float:
    """Activations of a decoder/encoder stack at micro-batch b: L blocks + embeddings/head (bytes per GPU).

    Checkpointing (docs/methods.md#memory): each block keeps only its input (r·sbh: 2 at 16-bit, 4 under torch AMP or
    fp32, whose residual stream is fp32) and one block's full working set exists during its recomputation.
    `checkpoint_offload` (training.checkpoint_offload, with checkpointing): the kept block inputs live in CPU RAM
    (Unsloth's use_gradient_checkpointing="unsloth": Unsloth_Offloaded_Gradient_Checkpointer saves
    hidden_states.to("cpu", non_blocking=True) and copies it back for the recomputation,
    unslothai/unsloth@4474e4bc:unsloth/models/_utils.py#L312-L338; at e3162dc5 imported from unsloth_zoo,
    unsloth/models/_utils.py#L89-L90): the GPU holds one block's input in flight besides its working set.
    `stack` (the planned stack): its loss kernel (FUSED_CLASSIFIER_STACKS), its fused RMSNorm and SwiGLU
    (FUSED_NORM_MLP_STACKS).
    """
    fused = stack in FUSED_NORM_MLP_STACKS
    per_layer = layer_activation_bytes(shape, micro_batch, precision, attention=attention, dropout=dropout,
                                       layout=layout, adapter=adapter, softmax_keeps_input=softmax_keeps_input,
                                       fused_norm_mlp=fused)
    if checkpointing:
        r = _residual_bytes(activation_kind(precision, layout))
        kept_inputs = 1 if checkpoint_offload else shape.layers
        blocks = kept_inputs * r * shape.seq_len * micro_batch * shape.hidden + per_layer
    else:
        blocks = shape.layers * per_layer
    return blocks + head_activation_bytes(shape, micro_batch, precision, dropout=dropout, layout=layout,
                                          adapter=adapter, softmax_keeps_input=softmax_keeps_input,
                                          fused_classifier=stack in FUSED_CLASSIFIER_STACKS, fused_norm=fused)


def activation_element_bytes(precision: str, layout: str) -> float:
    """Effective bytes per activation element, for rescaling a per-sample figure between precisions."""
    kind = activation_kind(precision, layout)
    return {"fp32": FP32_ACTIVATION_ELEMENT_BYTES, "amp": AMP_ACTIVATION_ELEMENT_BYTES,
            "half": HALF_ACTIVATION_ELEMENT_BYTES}[kind]


def checkpointing_fraction(model: ResolvedModel, precision: str, layout: str,
                           adapter: Adapter | None = None) -> tuple[float, Note]:
    """Kept fraction of per-sample activations under checkpointing, and how it was obtained."""
    shape = model.transformer
    if shape is None:
        return CHECKPOINTED_ACTIVATION_FRACTION, detail("ckpt_chen", factor=CHECKPOINTED_ACTIVATION_FRACTION)
    full = transformer_activation_bytes(shape, 1, precision, layout=layout, adapter=adapter)
    kept = transformer_activation_bytes(shape, 1, precision, checkpointing=True, layout=layout, adapter=adapter)
    fraction = kept / full
    return fraction, detail("ckpt_ratio", factor=fraction)


def _rescaled_per_sample(per_sample: float, model: ResolvedModel, *, given_precision: str, precision: str,
                         layout: str, checkpointing: bool, extra: list[Note], adapter: Adapter | None = None) -> float:
    """A per-sample activation figure moved to another precision and to checkpointing; says how in `extra`."""
    if given_precision != precision:
        scale = activation_element_bytes(precision, layout) / activation_element_bytes(given_precision, layout)
        per_sample *= scale
        extra.append(detail("scaled", from_precision=given_precision, precision=precision, factor=scale))
    if checkpointing:
        fraction, how = checkpointing_fraction(model, precision, layout, adapter)
        per_sample *= fraction
        extra.append(how)
    return per_sample


def _formula_detail(shape: TransformerShape, precision: str, layout: str, *, attention: str,
                    attention_why: Note | str, checkpointing: bool,
                    softmax_keeps_input: bool = False, fused_classifier: bool = False,
                    checkpoint_offload: bool = False, fused_norm_mlp: bool = False) -> tuple[Note, ...]:
    """How the transformer formula was set up, knob by knob (the plan's source line for the activations)."""
    kind = activation_kind(precision, layout)
    pieces: list[Note | str] = [{"fp32": "fp32", "amp": "torch AMP"}[kind] if kind != "half" else piece("half")]
    pieces.append(piece("attention_why", attention=attention, why=attention_why) if attention_why
                  else piece("attention", attention=attention))
    if shape.kv_head_count != shape.heads:
        pieces.append(piece("kv_heads", n=shape.kv_head_count))
    if fused_qkv_extra(shape):
        pieces.append(piece("fused_qkv"))
    pieces.append(shape.norm_kind)
    if fused_norm_mlp and (shape.norm_kind == "rmsnorm" or shape.mlp == "swiglu"):
        pieces.append(piece("fused_norm_mlp"))
    if shape.dropout is None:
        pieces.append(piece("dropout_assumed" if ASSUME_DROPOUT else "no_dropout_assumed"))
    else:
        pieces.append(piece("dropout", p=shape.dropout))
    if softmax_keeps_input:
        pieces.append(piece("softmax_input_kept"))
    if checkpointing:
        pieces.append(piece("checkpointing"))
    if checkpoint_offload:
        pieces.append(piece("checkpoint_offload"))
    if not shape.vocab:
        loss = detail("no_vocab")
    elif shape.loss == "chunked_fp32":
        loss = detail("chunked_fp32_loss", formula="4sbV", formula2="4sbV")
    elif shape.loss == "standard" and fused_classifier:
        loss = detail("fused_classifier_loss", formula="t·sbV")
    elif shape.loss == "standard":
        loss = detail("logits", formula="4sbV", precision="fp32")
    else:
        loss = detail(f"{shape.loss}_loss")
    return detail("korthikanti", formula="2022, s·b·h·(34 + 5as/h)", what=tuple(pieces)), loss


def activation_bytes(model: ResolvedModel, precision: str, micro_batch: int, *, checkpointing: bool = False,
                     line: ActivationLine | None = None, layout: str = "torch_amp", attention: str = "sdpa",
                     attention_why: Note | str = "", adapter: Adapter | None = None,
                     softmax_keeps_input: bool = False, stack: str | None = None,
                     checkpoint_offload: bool = False) -> tuple[float, Source]:
    """Activation bytes per GPU at micro-batch b and where they came from.

    Precedence (docs/methods.md: measured > traced > formula): a fitted line (its intercept included; lines are
    taken as measured without checkpointing), the transformer formula, then the user's per-sample figure.
    `attention` is the resolved kind (resolve_attention) and `attention_why` how it was chosen;
    `softmax_keeps_input`: training.softmax_keeps_input (PyTorch < 1.11, formula only); `stack`: the planned stack
    (planner.engine.stack.planned_stack), what its kernels keep; `checkpoint_offload`: training.checkpoint_offload
    (formula only: a measured line or a user figure says what its run kept).
    """
    if micro_batch < 1:
        raise InputError(None, "micro_batch", micro_batch, "an integer >= 1")
    activation_element_bytes(precision, layout)  # rejects an unknown precision or layout before any branch
    if line is not None:
        extra: list[Note] = []
        per_sample = _rescaled_per_sample(line.bytes_per_sample, model, given_precision=line.precision,
                                          precision=precision, layout=layout, checkpointing=checkpointing,
                                          extra=extra, adapter=adapter)
        return line.intercept_bytes + per_sample * micro_batch, line.source.plus(*extra)
    if model.transformer is not None:
        shape = model.transformer
        value = transformer_activation_bytes(shape, micro_batch, precision, attention=attention,
                                             checkpointing=checkpointing, layout=layout, adapter=adapter,
                                             softmax_keeps_input=softmax_keeps_input, stack=stack,
                                             checkpoint_offload=checkpoint_offload)
        parts = _formula_detail(shape, precision, layout, attention=attention, attention_why=attention_why,
                                checkpointing=checkpointing, softmax_keeps_input=softmax_keeps_input,
                                fused_classifier=stack in FUSED_CLASSIFIER_STACKS,
                                checkpoint_offload=checkpointing and checkpoint_offload,
                                fused_norm_mlp=stack in FUSED_NORM_MLP_STACKS)
        if adapter is not None:
            parts += (detail("frozen_base_q" if quantized_base_keeps_inputs(adapter) else "frozen_base",
                             adapter=adapter.kind, targets=adapter.targets, base=adapter.base_dtype),)
        return value, Source("analytic", parts=parts)
    if model.activation_bytes_per_sample is not None:
        extra = [detail("user_activations", bytes=model.activation_bytes_per_sample)]
        if model.activation_precision is None:
            extra.append(detail("user_activations_as_is"))
        per_sample = _rescaled_per_sample(model.activation_bytes_per_sample, model,
                                          given_precision=model.activation_precision or precision,
                                          precision=precision, layout=layout, checkpointing=checkpointing,
                                          extra=extra, adapter=adapter)
        return per_sample * micro_batch, Source("user", parts=tuple(extra))
    raise CannotEstimate(
        "model.activation_bytes_per_sample",
        f"an activation size for model {model.name}: nothing measured or traced at {precision}, no transformer "
        "shape for the formula; run `python -m bench trace` or give model.activation_bytes_per_sample")
