"""Memory per GPU (ESTIMATION.md §1): model states by framework layout, transients, overheads and the fit."""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.engine.estimates import ActivationLine, MemoryEstimate, ResolvedModel, Source
from planner.engine.memory_activations import (
    PRECISIONS,
    activation_bytes,
    head_activation_bytes,
    layer_activation_bytes,
    logits_loss_bytes,
    transformer_activation_bytes,
)
from planner.engine.notes import Note
from planner.inputs.errors import InputError
from planner.vocab import (
    ADAPTER_TARGETS,
    GIB,
    MEASURED_KINDS,
    MIB,
    OPTIMIZER_IMPLS,
    OPTIMIZERS,
    SHARDINGS,
    STATE_LAYOUTS,
)

__all__ = [
    "StateBytes", "TransientParts", "trainable_params", "total_params", "adapter_params", "model_state_bytes",
    "transient_parts", "transient_bytes", "transformer_activation_bytes", "layer_activation_bytes",
    "head_activation_bytes", "logits_loss_bytes", "activation_bytes", "fit_activation_line", "workspace_bytes",
    "estimate_memory", "checkpoint_bytes", "max_micro_batch_that_fits",
]


# Optimizer state per trainable parameter with fp32 states (ESTIMATION.md §1 "Other optimizers"): SGD none,
# momentum one buffer, Adam/AdamW m and v, Adafactor factored row/column moments (≈ 0 per parameter),
# 8-bit Adam (Dettmers et al. 2022) two 1-byte states.
OPTIMIZER_STATE_BYTES = {"sgd": 0.0, "sgd_momentum": 4.0, "adam": 8.0, "adamw": 8.0, "adafactor": 0.0,
                         "adam8bit": 2.0}
# Frozen LoRA/QLoRA base weights. nf4: 4 bits + one fp32 absmax per 64-weight block = 0.5 + 4/64 B
# (Dettmers et al. 2023, QLoRA §2; bitsandbytes blocksize 64, double quantisation off, its default in
# transformers' BitsAndBytesConfig). With double quantisation the constants fall to 0.127 bit (≈ 0.516 B).
BASE_DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "int8": 1.0, "nf4": 0.5 + 4 / 64}

# cuBLAS workspace per handle and stream: PyTorch's default CUBLAS_WORKSPACE_CONFIG ":4096:2:16:8"
# (2 × 4 MiB + 8 × 16 KiB = 8.125 MiB), ":4096:8" = 32 MiB on compute capability >= 9.0
# (aten/src/ATen/cuda/CublasHandlePool.cpp; ESTIMATION.md §1). The autograd backward thread has its own handle.
CUBLAS_WORKSPACE_BYTES = 8.125 * MIB
CUBLAS_WORKSPACE_SM90_BYTES = 32 * MIB
CUBLAS_HANDLES = 2
# cuDNN convolution workspaces: no published default (cuDNN picks per layer, large with cudnn.benchmark); an
# assumption until a measurement replaces it (measured peaks already contain it).
CUDNN_WORKSPACE_CNN_BYTES = 256 * MIB
# CUDA context: ≈ 300 MiB with lazy loading, growing as cuBLAS/cuDNN kernels load (ESTIMATION.md §1).
CUDA_CONTEXT_BYTES = 0.5 * GIB
# NCCL buffers when N > 1: "hundreds of MiB" (ESTIMATION.md §1): NCCL_BUFFSIZE 4 MiB per channel and peer
# plus proxy/channel state.
NCCL_BUFFER_BYTES = 0.5 * GIB
TIGHT_HEADROOM = 0.10  # below this the plan says "tight" (ESTIMATION.md §1 "Fit")


def _check(value: object, allowed: tuple, field: str) -> None:
    if value not in allowed:
        raise InputError(None, field, value, "one of " + ", ".join(map(str, allowed)))


# ---------------------------------------------------------------- parameters


def adapter_params(model: ResolvedModel, adapter) -> int:
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
    square = 2 * h  # q, k, v, o are h × h (no grouped-query shapes in TransformerShape)
    per_layer = {"attention": 4 * square, "qv": 2 * square}.get(adapter.targets)
    if per_layer is None:  # all_linear: attention + MLP matrices (3 for SwiGLU, 2 for GeLU), each h × f
        per_layer = 4 * square + (3 if shape.mlp == "swiglu" else 2) * (h + f)
    return shape.layers * adapter.rank * per_layer


def trainable_params(model: ResolvedModel, training) -> int:
    """Trainable parameters T. With an adapter the whole base is frozen (frozen_fraction is then unused)."""
    if training.adapter is not None:
        return adapter_params(model, training.adapter)
    return int(round(model.params * (1.0 - training.frozen_fraction)))


def total_params(model: ResolvedModel, training) -> int:
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
    """(weight, grad, optimizer) bytes per trainable parameter, unsharded (ESTIMATION.md §1 table).

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


def model_state_bytes(params: int, trainable: int, optimizer: str, state_layout: str, sharding: str, n_gpus: int,
                      precision: str, largest_layer_params: int | None = None,
                      adapter_base_dtype: str | None = None) -> StateBytes:
    """Weights, gradients and optimizer state per GPU (ESTIMATION.md §1).

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
    frozen_w = BASE_DTYPE_BYTES[adapter_base_dtype] if adapter_base_dtype else w
    frozen, n, unit = params - trainable, n_gpus, largest_layer_params or 0
    if state_layout == "deepspeed":
        # DeepSpeed estimate_zero2/zero3_model_states_mem_needs (no offload): Z2 4Ψ + 16Ψ/N, Z3 4·LL + 18Ψ/N.
        # Split: fp16 weights and grads + fp32 grad partition (4/N) + master and moments (12/N); Z3's extra
        # 2 B/param of the estimator is put with the gradients, its 4·LL half weights, half gradients.
        if sharding == "zero2":
            return StateBytes(w * trainable + frozen_w * frozen, g * trainable + 4 * trainable / n,
                              o * trainable / n)
        return StateBytes((w * trainable + frozen_w * frozen) / n + 2 * unit, 4 * trainable / n + 2 * unit,
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


def checkpoint_bytes(params: int, trainable: int, optimizer: str, state_layout: str, precision: str = "bf16",
                     adapter_base_dtype: str | None = None) -> float:
    """Checkpoint size on disk: all weights + full optimizer state (ESTIMATION.md §5); deepspeed = zero_paper."""
    layout = "zero_paper" if state_layout == "deepspeed" else state_layout
    states = model_state_bytes(params, trainable, optimizer, layout, "none", 1, precision,
                               adapter_base_dtype=adapter_base_dtype)
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
    """foreach step() temporaries (ESTIMATION.md §1, checked): Adam/AdamW one param-sized buffer (sqrt of v);
    SGD with weight decay `grad + wd·param` (weight decay assumed, the usual SGD setting); Adafactor's update
    buffer (assumed alike); fused kernels and bitsandbytes 8-bit Adam update in place."""
    _check(optimizer, OPTIMIZERS, "training.optimizer")
    _check(optimizer_impl, OPTIMIZER_IMPLS, "training.optimizer_impl")
    if optimizer_impl == "fused" or optimizer == "adam8bit":
        return 0.0
    return 2.0 if state_layout == "pure_bf16" else 4.0


def ddp_bucket_bytes(trainable: int, n_gpus: int, sharding: str, state_layout: str) -> float:
    """PyTorch DDP copies gradients into its buckets (gradient_as_bucket_view=False, the default): one more
    gradient-sized buffer when N > 1. ZeRO/FSDP and the DeepSpeed/Megatron layouts reduce from their own
    contiguous gradient buffers, already counted."""
    if n_gpus <= 1 or sharding != "none" or state_layout not in ("torch_amp", "pure_bf16"):
        return 0.0
    return (4.0 if state_layout == "torch_amp" else 2.0) * trainable


def transient_parts(trainable: int, precision: str, optimizer: str, optimizer_impl: str, grad_accum: int,
                    n_gpus: int, sharding: str, state_layout: str = "torch_amp") -> TransientParts:
    """Step-time and forward-time transients per GPU (ESTIMATION.md §1 "Transients").

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
    cache = 2.0 * trainable if state_layout == "torch_amp" and precision in ("fp16", "bf16") else 0.0
    if sharding == "zero3":
        cache /= n_gpus
    buckets = ddp_bucket_bytes(trainable, n_gpus, sharding, state_layout)
    return TransientParts(step=temp + buckets, forward=cache + buckets)


def transient_bytes(trainable: int, precision: str, optimizer: str, optimizer_impl: str, grad_accum: int,
                    n_gpus: int, sharding: str, activations: float = 0.0, state_layout: str = "torch_amp") -> float:
    """Transient bytes at the peak on top of states + `activations` (0: the small-batch, step-time peak)."""
    parts = transient_parts(trainable, precision, optimizer, optimizer_impl, grad_accum, n_gpus, sharding,
                            state_layout)
    return parts.beyond(activations)


# ---------------------------------------------------------------- measured lines


def _least_squares(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(intercept, slope) of y on x."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - slope * mx, slope


def fit_activation_line(points: list[tuple[int, float]], states_bytes: float, precision: str,
                        source: Source) -> ActivationLine | None:
    """Fit peak(b) = max(M_step, M0 + b·m_act) (ESTIMATION.md §1) to (batch, peak bytes) points.

    The leading points may sit on the flat, optimizer-step-dominated part: every split into k flat points and
    a line through the rest (>= 2 points) is tried, and the one with the least squared error wins (fewest
    flat points on ties). Two points give the exact line; one point, or no growth with the batch, gives None.
    The intercept is M0 less the analytic states (clamped at 0).
    """
    by_batch: dict[int, list[float]] = {}
    for batch, peak in points:
        by_batch.setdefault(int(batch), []).append(float(peak))
    pts = sorted((b, sum(v) / len(v)) for b, v in by_batch.items())
    if len(pts) < 2:
        return None
    best: tuple[float, float, float] | None = None  # (sse, m0, slope)
    for k in range(0, len(pts) - 1):
        flat, rest = pts[:k], pts[k:]
        m0, slope = _least_squares(rest)
        if slope <= 0:
            continue
        level = sum(p for _, p in flat) / k if k else 0.0
        sse = sum((p - level) ** 2 for _, p in flat) + sum((p - m0 - slope * b) ** 2 for b, p in rest)
        if best is None or sse < best[0] * (1 - 1e-9) - 1e-6:
            best = (sse, m0, slope)
    if best is None:
        return None
    _, m0, slope = best
    return ActivationLine(intercept_bytes=max(0.0, m0 - states_bytes), bytes_per_sample=slope, precision=precision,
                          source=source, max_batch_measured=pts[-1][0])


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


def workspace_bytes(family: str, compute_capability: str | None) -> float:
    """In-allocator library workspaces: cuBLAS per handle × 2 handles, + cuDNN for CNNs (ESTIMATION.md §1)."""
    per_handle = CUBLAS_WORKSPACE_SM90_BYTES if _is_sm90_or_newer(compute_capability) else CUBLAS_WORKSPACE_BYTES
    return CUBLAS_HANDLES * per_handle + (CUDNN_WORKSPACE_CNN_BYTES if family == "cnn" else 0.0)


def _largest_unit_params(model: ResolvedModel) -> int | None:
    """The ZeRO-3 gathered unit: the given largest layer, else the larger of embedding and one block."""
    if model.largest_layer_params is not None or model.transformer is None:
        return model.largest_layer_params
    s = model.transformer
    block = 4 * s.hidden**2 + (3 if s.mlp == "swiglu" else 2) * s.hidden * s.ffn_width
    return max(s.vocab * s.hidden, block)


def peak_parts(grad_bytes: float, activations: float, parts: TransientParts,
               grad_accum: int) -> tuple[float, float, float]:
    """(grads, activations, transients) alive at the peak, which is the larger of two moments (ESTIMATION.md §1):

    - end of forward: activations + forward transients, and gradients only when accumulation keeps them alive
      (zero_grad(set_to_none=True), the default, frees them before forward at accumulation 1);
    - optimizer.step(): all gradients + the optimizer's temporaries; activations are freed by then.
    """
    grads_in_forward = grad_bytes if grad_accum > 1 else 0.0
    forward_peak = grads_in_forward + activations + parts.forward
    step_peak = grad_bytes + parts.step
    if forward_peak >= step_peak:
        return grads_in_forward, activations, parts.forward
    return grad_bytes, 0.0, parts.step


def estimate_memory(model: ResolvedModel, training, precision: str, micro_batch: int, grad_accum: int,
                    n_gpus: int, capacity_gib: float, line: ActivationLine | None = None,
                    workspace_gib: float | None = None, context_gib: float | None = None,
                    compute_capability: str | None = None) -> MemoryEstimate:
    """Per-GPU memory by part at the peak moment (see peak_parts) + workspace + context + NCCL, so the
    breakdown sums to the peak of ESTIMATION.md §1: peak(b) = max(M_step, M0 + b·m_act)."""
    layout = training.state_layout
    trainable = trainable_params(model, training)
    params = total_params(model, training)
    base_dtype = training.adapter.base_dtype if training.adapter is not None else None
    largest = _largest_unit_params(model) if training.sharding == "zero3" else None
    states = model_state_bytes(params, trainable, training.optimizer, layout, training.sharding, n_gpus, precision,
                               largest, base_dtype)
    activations, source = activation_bytes(model, precision, micro_batch, training.activation_checkpointing, line,
                                           layout)
    parts = transient_parts(trainable, precision, training.optimizer, training.optimizer_impl, grad_accum, n_gpus,
                            training.sharding, layout)
    from_measurement = line is not None and line.source.kind in MEASURED_KINDS
    if line is not None:
        # A fitted intercept already holds the forward-time extras of the measured run (autocast cache...);
        # DDP buckets are not in a single-GPU measurement.
        parts = TransientParts(parts.step, ddp_bucket_bytes(trainable, n_gpus, training.sharding, layout))
    notes: list[str] = []
    if workspace_gib is not None:
        workspace = workspace_gib * GIB
        context = context_gib * GIB if context_gib is not None else 0.0
    else:
        # max_memory_allocated of a measured run already contains the cuBLAS/cuDNN workspaces.
        workspace = 0.0 if from_measurement else workspace_bytes(model.family, compute_capability)
        context = context_gib * GIB if context_gib is not None else CUDA_CONTEXT_BYTES
    if training.sharding == "zero3" and largest is None:
        notes.append(Note("zero3_layer_unknown"))
    grads, shown_activations, transients = peak_parts(states.grads, activations, parts, grad_accum)
    if shown_activations < activations:
        notes.append(Note("peak_at_optimizer_step", activations_gib=round(activations / GIB, 2)))
    estimate = MemoryEstimate(
        weights=states.weights, grads=grads, optimizer=states.optimizer, activations=shown_activations,
        transients=transients, workspace=workspace, context=context,
        nccl=NCCL_BUFFER_BYTES if n_gpus > 1 else 0.0, capacity=capacity_gib * GIB, source=source,
    )
    if estimate.fits and estimate.headroom < TIGHT_HEADROOM:
        notes.append(Note("headroom_tight", pct=round(estimate.headroom * 100)))
    return replace(estimate, notes=tuple(notes))


def max_micro_batch_that_fits(model: ResolvedModel, training, precision: str, n_gpus: int, capacity_gib: float,
                              candidates: list[int], line: ActivationLine | None = None,
                              workspace_gib: float | None = None, context_gib: float | None = None,
                              compute_capability: str | None = None) -> int | None:
    """The largest candidate micro-batch whose estimate fits in 0.95 × capacity, or None."""
    for b in sorted(set(candidates), reverse=True):
        est = estimate_memory(model, training, precision, b, 1, n_gpus, capacity_gib, line, workspace_gib,
                              context_gib, compute_capability)
        if est.fits:
            return b
    return None
