"""Memory per GPU (docs/methods.md#memory): model states by framework layout, transients, overheads and the fit."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from planner.engine.estimates import (
    BORDERLINE_FRACTION,
    ActivationLine,
    MemoryEstimate,
    ResolvedModel,
    Source,
    detail,
)
from planner.engine.fit import least_squares_line
from planner.engine.memory_activations import (
    activation_bytes,
    head_activation_bytes,
    layer_activation_bytes,
    logits_loss_bytes,
    resolve_attention,
    transformer_activation_bytes,
)
from planner.engine.notes import Note
from planner.engine.option import OptionPlan
from planner.engine.shapes import block_params, embedding_params
from planner.engine.stack import planned_stack
from planner.inputs.errors import CannotEstimate, InputError
from planner.vocab import (
    ADAPTER_TARGETS,
    GIB,
    HALF_PRECISIONS,
    MEASURED_KINDS,
    MIB,
    OPTIMIZER_IMPLS,
    OPTIMIZERS,
    PRECISIONS,
    QUANTIZED_BASE_DTYPES,
    SHARDINGS,
    STATE_LAYOUTS,
    MemoryPhase,
    element_bytes,
)

if TYPE_CHECKING:  # type names only: planner.inputs.scenario imports yaml
    from planner.inputs.scenario import Adapter, TrainingSetup

__all__ = [
    "StateBytes", "TransientParts", "trainable_params", "total_params", "adapter_params", "model_state_bytes",
    "transient_parts", "transient_bytes", "transformer_activation_bytes", "layer_activation_bytes",
    "head_activation_bytes", "logits_loss_bytes", "activation_bytes", "fit_activation_line", "workspace_bytes",
    "estimate_memory", "checkpoint_bytes", "RESERVED_OVER_CHURNED", "max_micro_batch_that_fits", "resolve_attention",
    "option_activation_bytes",
    "quantized_base_params", "unquantized_base_bytes", "fsdp_units", "fsdp_gathered_bytes", "fsdp_transient_bytes",
    "fsdp_accumulated_grad_bytes", "is_fsdp", "FsdpUnits", "cuda_context_bytes",
    "CUDA_CONTEXT", "CUDA_GENERATIONS",
]


# Optimizer state per trainable parameter with fp32 states (docs/methods.md#memory "Other optimizers"): SGD none,
# momentum one buffer, Adam/AdamW m and v, Adafactor factored row/column moments (≈ 0 per parameter),
# 8-bit Adam (Dettmers et al. 2022) two 1-byte states.
OPTIMIZER_STATE_BYTES = {"sgd": 0.0, "sgd_momentum": 4.0, "adam": 8.0, "adamw": 8.0, "adafactor": 0.0,
                         "adam8bit": 2.0}
# Frozen LoRA/QLoRA base weights. nf4: 4 bits + one fp32 absmax per 64-weight block = 0.5 + 4/64 B
# (Dettmers et al. 2023, QLoRA §2; bitsandbytes blocksize 64, double quantisation off, its default in
# transformers' BitsAndBytesConfig). With double quantisation the constants fall to 0.127 bit (≈ 0.516 B).
# nf4_dq: double quantisation stores the constants in 8 bits with one fp32 per 256 of them, 8/64 + 32/(64·256) =
# 0.127 bit per weight (QLoRA §2): 0.5 + 0.127/8 B. Only the blocks' linear weights are quantised: embeddings,
# the LM head and norms stay 16-bit (bitsandbytes replaces nn.Linear layers; transformers' BitsAndBytesConfig
# skips the output embedding, llm_int8_skip_modules / get_keys_to_not_convert).
BASE_DTYPE_BYTES = {"bf16": float(element_bytes("bf16")), "fp16": float(element_bytes("fp16")), "int8": 1.0, "nf4": 0.5 + 4 / 64, "nf4_dq": 0.5 + (8 / 64 + 32 / (64 * 256)) / 8}
UNQUANTIZED_BASE_BYTES = float(element_bytes("bf16"))  # embeddings, LM head and norms of a quantised base: bf16/fp16
# peft.prepare_model_for_kbit_training "cast all non INT8 parameters to fp32": every fp16/bf16 parameter that is not a
# bitsandbytes Params4bit becomes fp32 (huggingface/peft@5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40:
# src/peft/utils/other.py#L193-L209), and it turns on gradient checkpointing (#L221-L245, use_gradient_checkpointing
# defaults to True). The HF/PEFT QLoRA stack (the QLoRA paper's qlora.py) calls it; LitGPT does not.
KBIT_UPCAST_BYTES = float(element_bytes("fp32"))

# cuBLAS workspace per handle and stream: PyTorch's default CUBLAS_WORKSPACE_CONFIG ":4096:2:16:8"
# (2 × 4 MiB + 8 × 16 KiB = 8.125 MiB), ":4096:8" = 32 MiB on compute capability >= 9.0
# (aten/src/ATen/cuda/CublasHandlePool.cpp; docs/methods.md#memory). The autograd backward thread has its own handle.
CUBLAS_WORKSPACE_BYTES = 8.125 * MIB
CUBLAS_WORKSPACE_SM90_BYTES = 32 * MIB
CUBLAS_HANDLES = 2
# cuDNN convolution workspaces: no published default (cuDNN picks per layer, large with cudnn.benchmark); an
# assumption until a measurement replaces it (measured peaks already contain it).
CUDNN_WORKSPACE_CNN_BYTES = 256 * MIB
# CUDA context: ≈ 300 MiB with lazy loading, growing as cuBLAS/cuDNN kernels load (docs/methods.md#memory).
CUDA_CONTEXT_BYTES = 0.5 * GIB
# The CUDA context by module-loading generation and GPU architecture (compute capability), each figure cited; what is
# not listed falls back to the generation's row ("*"). "lazy": CUDA_MODULE_LOADING=LAZY, which PyTorch >= 1.13 sets
# when unset (pytorch/pytorch#86509: 287,047,680 B lazy vs 666,632,192 B eager after initialisation) and CUDA
# enables by default on Linux since 12.2 (CUDA Programming Guide, "Lazy Loading", change history: 11.7 introduced,
# disabled; 12.2 default on Linux; 12.3 default everywhere); the current generation and the default. "eager":
# CUDA < 11.7 or PyTorch < 1.13, every kernel loaded at initialisation.
CUDA_GENERATIONS = ("lazy", "eager")
CUDA_CONTEXT = {
    # nvidia-smi "used" after one 1x1 tensor on a Tesla V100-SXM2-16GB: 1343 MiB, the context with every kernel
    # loaded (HF transformers docs perf_train_gpu_one, corpus hf-transformers-perf-train-gpu-one L87).
    ("eager", "7.0"): (1343 * MIB, detail("context_eager_v100", mib=1343)),
    ("eager", "*"): (1343 * MIB, detail("context_eager", mib=1343)),
    # Bare lazy contexts measured are 256 MiB (RTX 3090, torch 2.7.1+cu128; invoke-ai/InvokeAI#9413), 274 MiB
    # (pytorch/pytorch#86509) and 426 MiB (RTX 6000 Ada, torch 2.10+cu130; unslothai/unsloth-zoo#1053); training
    # loads cuBLAS/cuDNN/NCCL kernels on top, so the planner keeps 0.5 GiB (an assumption above the largest).
    ("lazy", "*"): (CUDA_CONTEXT_BYTES, detail("context_lazy", cuda="12.2", torch="1.13", gib=CUDA_CONTEXT_BYTES / GIB,
                                               low=256, high=426)),
}
# NCCL buffers when N > 1: "hundreds of MiB" (docs/methods.md#memory): NCCL_BUFFSIZE 4 MiB per channel and peer
# plus proxy/channel state.
NCCL_BUFFER_BYTES = 0.5 * GIB
# The caching allocator's rounding and fragmentation (PyTorch CUDA caching allocator: 512-B rounding, 2 MiB
# small-pool and 20 MiB large-pool segments, blocks split and cached; docs "CUDA semantics › Memory management"),
# as a fraction of what the allocator churns: activations, gradients and transients, freed and allocated again every
# step (MemoryEstimate.churned). Weights, optimizer states and library workspaces are allocated once and stay: their
# segments are filled whole and never split again (issue 33: the 11% on all of the allocated peak put 5 GiB on a 70B
# QLoRA's 45 GiB of static 4-bit weights and refused a run that ran). Fitted on published runs: the median implied by
# the `fit` half of calibration/memory_cases.yaml ((reserved − allocated) / churned; calibration/memory_report.py
# fit_reserved_fraction), checked on the `check` half; the test refits it (tests/test_published_memory.py).
RESERVED_OVER_CHURNED = 0.19


def _check(value: object, allowed: tuple[object, ...], field: str) -> None:
    if value not in allowed:
        raise InputError(None, field, value, "one of " + ", ".join(map(str, allowed)))


# ---------------------------------------------------------------- parameters


def adapter_params(model: ResolvedModel, adapter: Adapter) -> int:
    """LoRA parameters: r·(d_in + d_out) per adapted matrix (Hu et al. 2021), summed over the layers."""
    shape = model.transformer
    if shape is None:
        raise InputError(None, "model.transformer", None,
                         f"the transformer shape (layers, hidden, ffn) of model {model.name!r}: training.adapter "
                         "counts LoRA parameters per adapted matrix, r·(d_in + d_out)")
    _check(adapter.targets, ADAPTER_TARGETS, "training.adapter.targets")
    if adapter.rank < 1:
        raise InputError(None, "training.adapter.rank", adapter.rank, "an integer >= 1")
    h, f = shape.hidden, shape.ffn_width
    kv = shape.kv_head_count * h // shape.heads  # k and v project to kv_heads x head_dim (grouped-query attention)
    q_or_o, k_or_v = h + h, h + kv  # d_in + d_out
    per_layer = {"attention": 2 * q_or_o + 2 * k_or_v, "qv": q_or_o + k_or_v}.get(adapter.targets)
    if per_layer is None:  # all_linear: attention + MLP matrices (3 for SwiGLU, 2 for GeLU), each h × f
        per_layer = 2 * q_or_o + 2 * k_or_v + (3 if shape.mlp == "swiglu" else 2) * (h + f)
    return shape.layers * adapter.rank * per_layer


def quantized_base_params(model: ResolvedModel) -> int:
    """The base parameters a quantised adapter base (int8, nf4) holds quantised: all but the token embedding and
    the LM head (one V×h matrix when tied), which stay 16-bit; without a shape, all of them."""
    shape = model.transformer
    if shape is None:
        return model.params
    return max(0, model.params - embedding_params(shape))


def unquantized_base_bytes(adapter: Adapter | None) -> float:
    """Bytes per parameter of a quantised base's unquantised part (embeddings, LM head, norms): fp32 after
    peft.prepare_model_for_kbit_training (adapter.kbit_upcast, KBIT_UPCAST_BYTES), else 16-bit."""
    if adapter is not None and adapter.base_dtype in QUANTIZED_BASE_DTYPES and adapter.kbit_upcast:
        return KBIT_UPCAST_BYTES
    return UNQUANTIZED_BASE_BYTES


def trainable_params(model: ResolvedModel, training: TrainingSetup) -> int:
    """Trainable parameters T. With an adapter the whole base is frozen (frozen_fraction is then unused)."""
    if training.adapter is not None:
        return adapter_params(model, training.adapter)
    return int(round(model.params * (1.0 - training.frozen_fraction)))


def total_params(model: ResolvedModel, training: TrainingSetup) -> int:
    """Ψ: the model's parameters plus any adapter's."""
    return model.params + (adapter_params(model, training.adapter) if training.adapter is not None else 0)


# ---------------------------------------------------------------- model states


@dataclass(frozen=True)
class StateBytes:
    """Model states per GPU, bytes."""

    weights: float
    grads: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.grads + self.optimizer


def optimizer_state_bytes_per_param(optimizer: str, state_layout: str) -> float:
    """Moment buffers per trainable parameter; pure_bf16 keeps fp32-sized moments in bf16 (half the bytes)."""
    _check(optimizer, OPTIMIZERS, "training.optimizer")
    state = OPTIMIZER_STATE_BYTES[optimizer]
    if state_layout == "pure_bf16" and optimizer != "adam8bit":
        return state / 2
    return state


def layout_bytes_per_param(state_layout: str, precision: str, optimizer: str) -> tuple[float, float, float]:
    """(weight, grad, optimizer) bytes per trainable parameter, unsharded (docs/methods.md#memory table).

    torch_amp 4/4/8 (fp32 params and grads); zero_paper 2/2/12 (Rajbhandari et al. 2020 §3: fp16 params and
    grads, fp32 master + moments, K = 12); megatron (Megatron-LM distributed-optimizer docs): fp16 2/2/16
    (fp32 main params and grads + moments) = 20, bf16 2/4/12 = 18, fp32 4/4/8 = 16; pure_bf16 2/2/4.
    The optimizer column is master copies + optimizer_state_bytes_per_param.
    """
    _check(state_layout, STATE_LAYOUTS, "training.state_layout")
    _check(precision, PRECISIONS, "precision")
    state = optimizer_state_bytes_per_param(optimizer, state_layout)
    if state_layout == "torch_amp":
        return 4.0, 4.0, state
    if state_layout in ("zero_paper", "deepspeed"):
        return 2.0, 2.0, 4.0 + state
    if state_layout == "megatron":
        if precision == "fp16":
            return 2.0, 2.0, 8.0 + state
        if precision == "bf16":
            return 2.0, 4.0, 4.0 + state
        return 4.0, 4.0, state
    return 2.0, 2.0, state


def _check_sharding(state_layout: str, sharding: str) -> None:
    _check(sharding, SHARDINGS, "training.sharding")
    if state_layout == "deepspeed" and sharding not in ("zero2", "zero3"):
        raise InputError(None, "training.sharding", sharding,
                         "zero2 or zero3 with state_layout deepspeed (DeepSpeed's estimator covers only those)")
    if state_layout == "megatron" and sharding not in ("none", "zero1"):
        raise InputError(None, "training.sharding", sharding,
                         "none or zero1 (the distributed optimizer) with state_layout megatron")


def model_state_bytes(params: int, trainable: int, *, optimizer: str, state_layout: str, precision: str,
                      sharding: str = "none", n_gpus: int = 1, largest_layer_params: int | None = None,
                      adapter_base_dtype: str | None = None, quantized_params: int | None = None,
                      unquantized_bytes: float = UNQUANTIZED_BASE_BYTES) -> StateBytes:
    """Weights, gradients and optimizer state per GPU (docs/methods.md#memory).

    Frozen parameters (Ψ − T) hold weights only, at the adapter's base dtype when given. ZeRO over N GPUs
    (Rajbhandari et al. 2020): Z1 shards the optimizer, Z2 also gradients, Z3 also weights, plus one gathered
    unit (the largest layer's weights and gradients), counted only when largest_layer_params is given.
    """
    _check(state_layout, STATE_LAYOUTS, "training.state_layout")
    _check_sharding(state_layout, sharding)
    if n_gpus < 1:
        raise InputError(None, "n_gpus", n_gpus, "an integer >= 1")
    if not 0 <= trainable <= params:
        raise InputError(None, "trainable", trainable, f"between 0 and params ({params})")
    if adapter_base_dtype is not None:
        _check(adapter_base_dtype, tuple(BASE_DTYPE_BYTES), "training.adapter.base_dtype")
    w, g, o = layout_bytes_per_param(state_layout, precision, optimizer)
    frozen, n, unit = params - trainable, n_gpus, largest_layer_params or 0
    frozen_w = BASE_DTYPE_BYTES[adapter_base_dtype] if adapter_base_dtype else w
    if adapter_base_dtype in QUANTIZED_BASE_DTYPES and quantized_params is not None and frozen:
        # A quantised base keeps its embeddings and head at 16-bit: the average byte per frozen parameter.
        quantized = min(quantized_params, frozen)
        frozen_w = (quantized * frozen_w + (frozen - quantized) * unquantized_bytes) / frozen
    if state_layout == "deepspeed":
        # DeepSpeed estimate_zero2/zero3_model_states_mem_needs (no offload): Z2 4Ψ + 16Ψ/N, Z3 4·LL + 18Ψ/N.
        # Split: fp16 weights and grads + fp32 grad partition (4/N) + master and moments (12/N); Z3's extra
        # 2 B/param of the estimator is put with the gradients, its 4·LL half weights, half gradients.
        if sharding == "zero2":
            return StateBytes(w * trainable + frozen_w * frozen, g * trainable + 4 * trainable / n,
                              o * trainable / n)
        # The gathered unit moves what is stored: a quantised base's blocks all-gather their 4- or 8-bit storage
        # (QLoRA under ZeRO-3 gathers the packed Params4bit, ~0.5 B a weight, not 2; issue 33), and a frozen
        # unit's gradient is only its trainable share.
        unit_w = frozen_w if adapter_base_dtype in QUANTIZED_BASE_DTYPES else 2.0
        unit_g = 2.0 * (trainable / params if adapter_base_dtype else 1.0)
        return StateBytes((w * trainable + frozen_w * frozen) / n + unit_w * unit, 4 * trainable / n + unit_g * unit,
                          o * trainable / n)
    weights, grads, opt = w * trainable + frozen_w * frozen, g * trainable, o * trainable
    if sharding in ("zero1", "zero2", "zero3"):
        opt /= n
    if sharding in ("zero2", "zero3"):
        grads /= n
    if sharding == "zero3":
        weights = weights / n + (frozen_w if adapter_base_dtype else w) * unit
        grads += g * unit if trainable else 0.0
    return StateBytes(weights, grads, opt)


def checkpoint_bytes(params: int, trainable: int, *, optimizer: str, state_layout: str, precision: str = "bf16",
                     adapter_base_dtype: str | None = None, quantized_params: int | None = None) -> float:
    """Checkpoint size on disk: all weights + full optimizer state (docs/methods.md#cost); deepspeed = zero_paper."""
    layout = "zero_paper" if state_layout == "deepspeed" else state_layout
    states = model_state_bytes(params, trainable, optimizer=optimizer, state_layout=layout, precision=precision,
                               adapter_base_dtype=adapter_base_dtype, quantized_params=quantized_params)
    return states.weights + states.optimizer


# ---------------------------------------------------------------- transients


@dataclass(frozen=True)
class TransientParts:
    """Bytes beyond model states: `step` lives only in optimizer.step(), `forward` alongside the activations."""

    step: float
    forward: float

    def beyond(self, activations: float) -> float:
        """What the peak adds to states + activations: peak = states + max(step, activations + forward)."""
        return max(self.step - activations, self.forward, 0.0)


def optimizer_temporary_bytes_per_param(optimizer: str, optimizer_impl: str, state_layout: str) -> float:
    """foreach step() temporaries (docs/methods.md#memory, checked): Adam/AdamW one param-sized buffer (sqrt of v);
    SGD with weight decay `grad + wd·param` (weight decay assumed, the usual SGD setting); Adafactor's update
    buffer (assumed alike); fused kernels and bitsandbytes 8-bit Adam update in place; a per-parameter loop
    (for_loop) holds one tensor's temporary at a time, negligible next to the model's states."""
    _check(optimizer, OPTIMIZERS, "training.optimizer")
    _check(optimizer_impl, OPTIMIZER_IMPLS, "training.optimizer_impl")
    if optimizer_impl in ("fused", "for_loop") or optimizer == "adam8bit":
        return 0.0
    return 2.0 if state_layout == "pure_bf16" else 4.0


def ddp_bucket_bytes(trainable: int, n_gpus: int, sharding: str, state_layout: str) -> float:
    """PyTorch DDP copies gradients into its buckets (gradient_as_bucket_view=False, the default): one more
    gradient-sized buffer when N > 1. ZeRO/FSDP and the DeepSpeed/Megatron layouts reduce from their own
    contiguous gradient buffers, already counted."""
    if n_gpus <= 1 or sharding != "none" or state_layout not in ("torch_amp", "pure_bf16"):
        return 0.0
    return (4.0 if state_layout == "torch_amp" else 2.0) * trainable


def transient_parts(trainable: int, *, precision: str, optimizer: str, optimizer_impl: str = "foreach",
                    grad_accum: int = 1, n_gpus: int = 1, sharding: str = "none",
                    state_layout: str = "torch_amp") -> TransientParts:
    """Step-time and forward-time transients per GPU (docs/methods.md#memory "Transients").

    Autocast weight cache: +2 B per trainable param (16-bit copies of fp32 weights) from forward until backward
    uses them; under ZeRO-3/FSDP each GPU holds only its 1/N shard of parameters, so only that shard is cast
    (the gathered unit is counted with the model states). Gradients kept alive by accumulation are handled in
    peak_parts; the sharded optimizer steps its 1/N shard, so its temporaries shrink by N.
    """
    _check(precision, PRECISIONS, "precision")
    _check(state_layout, STATE_LAYOUTS, "training.state_layout")
    _check(sharding, SHARDINGS, "training.sharding")
    if grad_accum < 1:
        raise InputError(None, "grad_accum", grad_accum, "an integer >= 1")
    temp = optimizer_temporary_bytes_per_param(optimizer, optimizer_impl, state_layout) * trainable
    if sharding != "none":
        temp /= n_gpus
    autocast = state_layout == "torch_amp" and precision in HALF_PRECISIONS
    cache = float(element_bytes(precision)) * trainable if autocast else 0.0
    if sharding == "zero3":
        cache /= n_gpus
    buckets = ddp_bucket_bytes(trainable, n_gpus, sharding, state_layout)
    return TransientParts(step=temp + buckets, forward=cache + buckets)


def transient_bytes(trainable: int, *, precision: str, optimizer: str, optimizer_impl: str = "foreach",
                    grad_accum: int = 1, n_gpus: int = 1, sharding: str = "none", activations: float = 0.0,
                    state_layout: str = "torch_amp") -> float:
    """Transient bytes at the peak on top of states + `activations` (0: the small-batch, step-time peak)."""
    parts = transient_parts(trainable, precision=precision, optimizer=optimizer, optimizer_impl=optimizer_impl,
                            grad_accum=grad_accum, n_gpus=n_gpus, sharding=sharding, state_layout=state_layout)
    return parts.beyond(activations)


# ---------------------------------------------------------------- measured lines

# Updating sums of squares of centred data carry a rounding error of about n·ε of the total sum of squares
# (ε = 2.2e-16; Chan, Golub & LeVeque 1983, "Algorithms for computing the sample variance", The American
# Statistician 37(3)): splits whose squared errors are closer than 8·n·ε of it are ties (fewest flat points win).
SPLIT_ROUNDING_PER_POINT = 8 * sys.float_info.epsilon


def fit_activation_line(points: Iterable[tuple[int, float]], states_bytes: float, precision: str,
                        source: Source) -> ActivationLine | None:
    """Fit peak(b) = max(M_step, M0 + b·m_act) (docs/methods.md#memory) to (batch, peak bytes) points.

    The leading points may sit on the flat, optimizer-step-dominated part: every split into k flat points and
    a rising line through the rest (>= 2 points) is scored, and the one with the least squared error wins
    (fewest flat points on ties); the line is then least_squares_line over the rest. Two points give the exact
    line; one point, or no growth with the batch, gives None. The intercept is M0 less the analytic states
    (clamped at 0). Peaks at the same batch are averaged first. O(n log n) in the points (the sort), O(n) after.
    """
    by_batch: dict[int, list[float]] = {}
    for batch, peak in points:
        by_batch.setdefault(int(batch), []).append(float(peak))
    pts = sorted((b, sum(v) / len(v)) for b, v in by_batch.items())
    if len(pts) < 2:
        return None
    k = _best_flat_split(pts)
    if k is None:
        return None
    m0, slope = least_squares_line(pts[k:])
    if slope <= 0:
        return None
    return ActivationLine(intercept_bytes=max(0.0, m0 - states_bytes), bytes_per_sample=slope, precision=precision,
                          source=source, max_batch_measured=pts[-1][0])


def _best_flat_split(pts: Sequence[tuple[int, float]]) -> int | None:
    """The k in 0..n−2 minimising SSE(pts[:k] about their mean) + SSE(pts[k:] about their line), among splits
    whose line rises; None when no line rises.

    One pass each way instead of a fit per split (which made the search O(n²)): Welford's running updates
    (Welford 1962, "Note on a method for calculating corrected sums of squares and products", Technometrics 4(3))
    give the flat prefix's sum of squares and, from the right, every suffix's centred sums Sxx, Sxy, Syy, whose
    least-squares residual is Syy − Sxy²/Sxx. The points are first shifted to their overall means (squared
    errors do not change), so large peaks with a small spread lose no precision.
    """
    n = len(pts)
    x0 = sum(float(b) for b, _ in pts) / n
    y0 = sum(p for _, p in pts) / n
    line_sse = [math.inf] * n  # math.inf: no rising line through pts[k:]
    mx = my = sxx = sxy = syy = 0.0
    for i in range(n - 1, -1, -1):
        x, y = float(pts[i][0]) - x0, pts[i][1] - y0
        m = n - i
        dx, dy = x - mx, y - my
        mx += dx / m
        my += dy / m
        sxx += dx * (x - mx)
        sxy += dx * (y - my)
        syy += dy * (y - my)
        if m >= 2 and sxx > 0 and sxy > 0:
            line_sse[i] = max(syy - sxy * sxy / sxx, 0.0)
    tie = max(1e-6, SPLIT_ROUNDING_PER_POINT * n * syy)  # syy now holds the sum of squares of all the points
    best: tuple[float, int] | None = None  # (sse, k)
    mean = flat_sse = 0.0
    for k in range(n - 1):
        if k:  # pts[k - 1] joins the flat part
            y = pts[k - 1][1] - y0
            d = y - mean
            mean += d / k
            flat_sse += d * (y - mean)
        if line_sse[k] == math.inf:
            continue
        sse = flat_sse + line_sse[k]
        if best is None or sse < best[0] * (1 - 1e-9) - tie:
            best = (sse, k)
    return None if best is None else best[1]


# ---------------------------------------------------------------- overheads and the estimate


def _is_sm90_or_newer(compute_capability: str | None) -> bool:
    """Unknown or unparsable capability takes the larger (Hopper) workspace: the conservative side."""
    if compute_capability is None:
        return True
    try:
        major = int(str(compute_capability).split(".")[0])
    except ValueError:
        return True
    return major >= 9


def cuda_context_bytes(compute_capability: str | None, *, cuda_generation: str = "lazy") -> tuple[float, Note]:
    """(bytes, where the figure comes from) of the CUDA context for the GPU's architecture and the module-loading
    generation (CUDA_CONTEXT): the architecture's own row when one is published, else the generation's."""
    _check(cuda_generation, CUDA_GENERATIONS, "cuda_generation")
    row = CUDA_CONTEXT.get((cuda_generation, str(compute_capability))) or CUDA_CONTEXT[(cuda_generation, "*")]
    return row


def workspace_bytes(family: str, compute_capability: str | None) -> float:
    """In-allocator library workspaces: cuBLAS per handle × 2 handles, + cuDNN for CNNs (docs/methods.md#memory)."""
    per_handle = CUBLAS_WORKSPACE_SM90_BYTES if _is_sm90_or_newer(compute_capability) else CUBLAS_WORKSPACE_BYTES
    return CUBLAS_HANDLES * per_handle + (CUDNN_WORKSPACE_CNN_BYTES if family == "cnn" else 0.0)


def _largest_unit_params(model: ResolvedModel) -> int | None:
    """The ZeRO-3 gathered unit: the given largest layer, else the larger of embedding and one block."""
    if model.largest_layer_params is not None or model.transformer is None:
        return model.largest_layer_params
    s = model.transformer
    return max(s.vocab * s.hidden, block_params(s))


# Layouts run by PyTorch FSDP when sharded (zero2 = SHARD_GRAD_OP, zero3 = FULL_SHARD); the DeepSpeed-style layouts
# gather through DeepSpeed's own ZeRO-3 partitioner (estimator figures, 4·LL).
FSDP_LAYOUTS = ("torch_amp", "pure_bf16")


@dataclass(frozen=True)
class FsdpUnits:
    """Parameters in FSDP's units for a transformer wrapped per block (the auto-wrap policy every FSDP stack sets):
    `root` = those left to the root unit (token embedding, LM head when untied), `block` = one wrapped block."""

    root: int
    block: int


def fsdp_units(model: ResolvedModel) -> FsdpUnits | None:
    """The root unit and one block from the transformer shape; without a shape, the given largest layer as the
    block (root unknown: 0); None when neither is known."""
    s = model.transformer
    if s is None:
        return None if model.largest_layer_params is None else FsdpUnits(0, model.largest_layer_params)
    return FsdpUnits(root=embedding_params(s), block=block_params(s))


def fsdp_gathered_bytes(units: FsdpUnits, *, precision: str, trainable_fraction: float, no_sync: bool,
                        base_bytes: float | None = None, root_bytes: float | None = None) -> float:
    """Unsharded parameters and gradients FSDP (FULL_SHARD) holds at the start of backward, on top of its shards:

    - the root unit: FSDP does not reshard the root's parameters after forward ("Do not free the root's parameters
      in the post-forward for FULL_SHARD with the intention that they are immediately used for backward",
      pytorch/pytorch@00ae0bc9:torch/distributed/fsdp/_runtime_utils.py `_post_forward_reshard`), and its
      gradient (the LM head's, first in backward) stays unsharded until the root's reduce-scatter at the end;
    - two blocks' parameters and one block's gradient: BackwardPrefetch.BACKWARD_PRE (FSDP's default) "at the peak
      holds the current set of parameters, next set of parameters, and current set of gradients in memory"
      (torch/distributed/fsdp/api.py BackwardPrefetch; Zhao et al. 2023, "PyTorch FSDP", VLDB, backward prefetching).

    Gathered parameters and gradients are in the compute dtype (MixedPrecision param_dtype: vocab.element_bytes, 2 B
    under fp16/bf16, 4 B in fp32 and tf32, which is stored as fp32; `base_bytes` for the blocks of a quantised adapter
    base and `root_bytes` for its root, which is not quantised: 16-bit, or fp32 after PEFT's upcast); gradients scale
    with the trainable fraction. Under no_sync the unsharded
    gradients are counted whole by the caller (fsdp_accumulated_grad_bytes), so none here.
    """
    compute = float(element_bytes(precision))
    per_param = base_bytes if base_bytes is not None else compute
    weights = (root_bytes if root_bytes is not None else per_param) * units.root + per_param * 2 * units.block
    grads = 0.0 if no_sync else compute * trainable_fraction * (units.root + units.block)
    return weights + grads


def fsdp_accumulated_grad_bytes(trainable: int, *, grad_bytes_per_param: float) -> float:
    """FSDP's no_sync() during gradient accumulation: "FSDP will accumulate the full model gradients (instead of
    gradient shards) until the eventual sync" (torch/distributed/fsdp/fully_sharded_data_parallel.py
    FullyShardedDataParallel.no_sync docstring): every trainable parameter's gradient, unsharded, on every GPU.
    LitGPT's finetune/full.py runs its accumulation steps in fabric.no_backward_sync, which is FSDP's no_sync
    (Lightning-AI/litgpt@26857050:litgpt/finetune/full.py#L280-L284; lightning fabric/strategies/fsdp.py
    _FSDPBackwardSyncControl.no_backward_sync)."""
    return grad_bytes_per_param * trainable


def fsdp_frozen_grad_params(params: int, trainable: int, training: TrainingSetup, n_gpus: int) -> int:
    """Frozen parameters FSDP still keeps gradients for: all of them when an adapter's trainable parameters share
    FSDP units with the frozen base (training.fsdp_frozen_grads: use_orig_params=True; "the gradient memory usage
    will be higher than expected (namely, equivalent to not freezing those parameters)", torch.distributed.fsdp
    docs, FullyShardedDataParallel, note on freezing parameters); 0 otherwise."""
    if not (training.fsdp_frozen_grads and is_fsdp(training, n_gpus) and training.adapter is not None):
        return 0
    return max(0, params - trainable)


def is_fsdp(training: TrainingSetup, n_gpus: int) -> bool:
    """Sharded torch-layout training over N > 1 GPUs runs as PyTorch FSDP (zero2 SHARD_GRAD_OP, zero3 FULL_SHARD)."""
    return training.state_layout in FSDP_LAYOUTS and training.sharding in ("zero2", "zero3") and n_gpus > 1


def fsdp_transient_bytes(model: ResolvedModel, training: TrainingSetup, *, precision: str, n_gpus: int,
                         grad_accum: int) -> float:
    """FSDP FULL_SHARD's gathered root unit, blocks and unsharded gradients at the start of backward
    (fsdp_gathered_bytes); 0 when not FSDP FULL_SHARD or nothing says the units."""
    if not is_fsdp(training, n_gpus) or training.sharding != "zero3":
        return 0.0
    units = fsdp_units(model)
    if units is None:
        return 0.0
    params = total_params(model, training)
    adapter = training.adapter
    quantized = adapter is not None and adapter.base_dtype in QUANTIZED_BASE_DTYPES
    return fsdp_gathered_bytes(units, precision=precision,
                               trainable_fraction=trainable_params(model, training) / max(params, 1),
                               no_sync=training.fsdp_no_sync and grad_accum > 1,
                               base_bytes=BASE_DTYPE_BYTES[adapter.base_dtype] if quantized and adapter else None,
                               root_bytes=unquantized_base_bytes(adapter) if quantized else None)


def option_activation_bytes(model: ResolvedModel, training: TrainingSetup, option: OptionPlan, *,
                            line: ActivationLine | None, adapter: Adapter | None) -> tuple[float, Source]:
    """Activation bytes of one micro-step of the option, at the attention its model, precision and GPU resolve to
    (resolve_attention); `adapter` None counts the base as trainable. CannotEstimate when nothing says them."""
    stack = planned_stack(training.stack, model.family).stack  # what its kernels keep (memory_activations)
    attention, why = resolve_attention(model.attention, family=model.family, precision=option.precision,
                                       compute_capability=option.gpu.compute_capability, stack=stack)
    return activation_bytes(model, option.precision, option.micro_batch,
                            checkpointing=training.activation_checkpointing, line=line,
                            layout=training.state_layout, attention=attention, attention_why=why, adapter=adapter,
                            softmax_keeps_input=training.softmax_keeps_input, stack=stack,
                            checkpoint_offload=training.checkpoint_offload)


def head_gradient_bytes(model: ResolvedModel, training: TrainingSetup, *, precision: str) -> float:
    """The LM head's weight gradient, allocated at the start of backward while every activation is still alive
    (the output layer is the first one backward reaches). Tied or not, the V×h matrix gets its gradient there."""
    shape = model.transformer
    if (shape is None or not shape.vocab or shape.loss == "sequence" or training.adapter is not None
            or training.frozen_fraction >= 1.0):
        return 0.0
    _, grad_bytes, _ = layout_bytes_per_param(training.state_layout, precision, training.optimizer)
    return grad_bytes * shape.vocab * shape.hidden


def peak_parts(grad_bytes: float, activations: float, parts: TransientParts, grad_accum: int, *,
               head_grad: float = 0.0, grads_kept: bool = False, accumulated_grads: float | None = None,
               head_grad_in_activations: float = 0.0) -> tuple[float, float, float, MemoryPhase]:
    """(grads, activations, transients, phase) alive at the peak, the larger of two moments (docs/methods.md#memory):

    - "backward", its start: activations + forward transients (autocast cache, the loss gradient is with the
      activations) + the head's weight gradient; all gradients only when accumulation keeps them alive
      (zero_grad(set_to_none=True), the default, frees them before forward at accumulation 1; `grads_kept`: zeroed
      gradients stay, PyTorch 1.x's zero_grad()). Later in backward
      each block's activations are freed as its gradients appear, so the start is the activation-side peak;
    - "optimizer_step": all gradients + the optimizer's temporaries; activations are freed by then.

    `accumulated_grads` replaces `grad_bytes` for the gradients alive through an accumulation micro-step (FSDP's
    no_sync keeps them unsharded); the step still sees the sharded `grad_bytes`. `head_grad_in_activations`: the
    part of the head's gradient a measured line's intercept already holds (measured at accumulation 1 with
    set_to_none, its peak is the start of backward, head gradient allocated); gradients kept whole through forward
    then count it once, not twice.
    """
    # The head's gradient is whole (V×h) before any reduce-scatter shards it, so it is not capped at the sharded total.
    kept = grad_bytes if accumulated_grads is None or grad_accum <= 1 else accumulated_grads
    if grad_accum > 1 or grads_kept:
        grads_in_forward = max(kept - head_grad_in_activations, 0.0)
    else:
        grads_in_forward = head_grad
    forward_peak = grads_in_forward + activations + parts.forward
    step_peak = grad_bytes + parts.step
    if forward_peak >= step_peak:
        return grads_in_forward, activations, parts.forward, "backward"
    return grad_bytes, 0.0, parts.step, "optimizer_step"


def estimate_memory(model: ResolvedModel, training: TrainingSetup, option: OptionPlan, *,
                    line: ActivationLine | None = None, workspace_gib: float | None = None,
                    context_gib: float | None = None, cuda_generation: str = "lazy") -> MemoryEstimate:
    """Per-GPU memory by part at the peak moment (see peak_parts) + workspace, fragmentation, context and NCCL, so
    the breakdown sums to the device total of docs/methods.md#memory: peak(b) = max(M_step, M0 + b·m_act).

    The option gives the GPU (capacity, compute capability for the workspace default and the attention kernel),
    the GPU count, the precision, the micro-batch and the accumulation; `workspace_gib`/`context_gib` override the
    defaults; the default context is cuda_context_bytes(GPU architecture, `cuda_generation`), named in a note.
    """
    layout, precision, n_gpus = training.state_layout, option.precision, option.n_gpus
    trainable = trainable_params(model, training)
    params = total_params(model, training)
    base_dtype = training.adapter.base_dtype if training.adapter is not None else None
    fsdp = is_fsdp(training, n_gpus)
    # FSDP's gathered units are transients of forward/backward (fsdp_transient_bytes), not model states.
    largest = _largest_unit_params(model) if training.sharding == "zero3" and not fsdp else None
    units = fsdp_units(model) if fsdp and training.sharding == "zero3" else None
    states = model_state_bytes(params, trainable, optimizer=training.optimizer, state_layout=layout,
                               precision=precision, sharding=training.sharding, n_gpus=n_gpus,
                               largest_layer_params=largest, adapter_base_dtype=base_dtype,
                               quantized_params=quantized_base_params(model),
                               unquantized_bytes=unquantized_base_bytes(training.adapter))
    notes: list[Note] = []
    try:
        activations, source = option_activation_bytes(model, training, option, line=line, adapter=training.adapter)
        known = True
    except CannotEstimate:
        # Plan the rest (states, time, cost) and say the fit is unknown rather than refuse the model.
        activations, known = 0.0, False
        source = Source("analytic", parts=(detail("unknown_activations", model=model.name),))
        notes.append(Note("activations_unknown", model=model.name, precision=precision))
    parts = transient_parts(trainable, precision=precision, optimizer=training.optimizer,
                            optimizer_impl=training.optimizer_impl, grad_accum=option.grad_accum, n_gpus=n_gpus,
                            sharding=training.sharding, state_layout=layout)
    from_measurement = line is not None and line.source.kind in MEASURED_KINDS
    if line is not None:
        # A fitted intercept already holds the forward-time extras of the measured run (autocast cache...);
        # DDP buckets are not in a single-GPU measurement.
        parts = TransientParts(parts.step, ddp_bucket_bytes(trainable, n_gpus, training.sharding, layout))
    if workspace_gib is not None:
        workspace = workspace_gib * GIB
        context = context_gib * GIB if context_gib is not None else 0.0
    else:
        # max_memory_allocated of a measured run already contains the cuBLAS/cuDNN workspaces.
        workspace = 0.0 if from_measurement else workspace_bytes(model.family, option.gpu.compute_capability)
        if context_gib is not None:
            context = context_gib * GIB
        else:
            context, context_why = cuda_context_bytes(option.gpu.compute_capability, cuda_generation=cuda_generation)
            notes.append(Note("cuda_context", mib=round(context / MIB), generation=cuda_generation,
                              arch=option.gpu.compute_capability or "?", source=context_why))
    if training.sharding == "zero3" and largest is None and units is None:
        notes.append(Note("zero3_layer_unknown"))
    no_sync = fsdp and training.fsdp_no_sync and option.grad_accum > 1
    accumulated = None
    _, grad_per_param, _ = layout_bytes_per_param(layout, precision, training.optimizer)
    frozen = fsdp_frozen_grad_params(params, trainable, training, n_gpus)
    if frozen:
        # FSDP keeps gradients for the frozen parameters its mixed units hold, sharded like the others.
        states = replace(states, grads=states.grads + grad_per_param * frozen / n_gpus)
        notes.append(Note("fsdp_frozen_grads", grads_gib=round(grad_per_param * frozen / n_gpus / GIB, 2)))
    if no_sync:
        accumulated = fsdp_accumulated_grad_bytes(trainable + frozen, grad_bytes_per_param=grad_per_param)
        notes.append(Note("fsdp_no_sync_grads", grads_gib=round(accumulated / GIB, 2), k=option.grad_accum))
    gathered = fsdp_transient_bytes(model, training, precision=precision, n_gpus=n_gpus,
                                    grad_accum=option.grad_accum)
    parts = TransientParts(parts.step, parts.forward + gathered)
    # FSDP's root unit holds the LM head's unsharded gradient (in fsdp_gathered_bytes); elsewhere it is its own part.
    head = 0.0 if units is not None else head_gradient_bytes(model, training, precision=precision)
    # A measured line holds the head's gradient in its intercept; the kept (sharded: 1/N) gradients hold it again.
    sharded_grads = training.sharding in ("zero2", "zero3") and not no_sync
    head_in_line = 0.0 if line is None else head / (n_gpus if sharded_grads else 1)
    grads, shown_activations, transients, phase = peak_parts(states.grads, activations, parts, option.grad_accum,
                                                             head_grad=0.0 if line is not None else head,
                                                             grads_kept=not training.set_grads_to_none,
                                                             accumulated_grads=accumulated,
                                                             head_grad_in_activations=head_in_line)
    if shown_activations < activations:
        notes.append(Note("peak_at_optimizer_step", activations_gib=round(activations / GIB, 2)))
    estimate = MemoryEstimate(
        weights=states.weights, grads=grads, optimizer=states.optimizer, activations=shown_activations,
        transients=transients, workspace=workspace, context=context,
        nccl=NCCL_BUFFER_BYTES if n_gpus > 1 else 0.0, capacity=option.gpu.memory_gib * GIB, source=source,
        fragmentation=RESERVED_OVER_CHURNED * (grads + shown_activations + transients), phase=phase,
        activations_known=known,
    )
    if estimate.fits and estimate.verdict == "borderline":
        notes.append(Note("headroom_tight", pct=round(estimate.headroom * 100),
                          band=round(BORDERLINE_FRACTION * 100)))
    return replace(estimate, notes=tuple(notes))


def max_micro_batch_that_fits(model: ResolvedModel, training: TrainingSetup, option: OptionPlan,
                              candidates: Iterable[int], *, line: ActivationLine | None = None,
                              workspace_gib: float | None = None, context_gib: float | None = None) -> int | None:
    """The largest candidate micro-batch whose estimate (at the option's accumulation) fits the capacity,
    or None; the option's own micro_batch is not used."""
    for b in sorted(set(candidates), reverse=True):
        est = estimate_memory(model, training, replace(option, micro_batch=b), line=line,
                              workspace_gib=workspace_gib, context_gib=context_gib)
        if est.fits:
            return b
    return None
