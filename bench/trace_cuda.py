"""CUDA behaviours that change training memory, emulated on CPU fake tensors for `bench trace` (docs/methods.md#tracing)."""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
import weakref
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

# CUDA autocast op lists, as registered for AutocastCUDA in aten/src/ATen/autocast_mode.h (torch 2.x; checked
# against this build's dispatcher in tests/test_trace.py). CPU autocast uses different lists: e.g. it leaves
# layer_norm, softmax, sum and pow in bf16 and casts cross_entropy_loss itself.
LOWER_PRECISION = (
    "_convolution.deprecated _convolution conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d.input "
    "conv_transpose3d.input convolution prelu addmm addmv addr matmul einsum mm mv linalg_vecdot linear addbmm "
    "baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell _thnn_fused_gru_cell lstm_cell gru_cell "
    "rnn_tanh_cell rnn_relu_cell _scaled_dot_product_flash_attention scaled_dot_product_attention "
    "cudnn_convolution cudnn_convolution_transpose"
).split()
FP32 = (
    "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow.Tensor_Scalar "
    "pow.Tensor_Tensor pow.Scalar softplus layer_norm native_layer_norm group_norm rms_norm frobenius_norm.dim "
    "nuclear_norm nuclear_norm.dim cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d "
    "hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss "
    "multilabel_margin_loss soft_margin_loss triplet_margin_loss multi_margin_loss binary_cross_entropy_with_logits "
    "dist pdist cdist renorm logsumexp upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d "
    "_upsample_nearest_exact2d upsample_nearest3d _upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d "
    "_upsample_bilinear2d_aa upsample_trilinear3d upsample_bicubic2d _upsample_bicubic2d_aa"
).split()
FP32_SET_OPT_DTYPE = (
    "prod prod.dim_int prod.dim_Dimname softmax.int softmax.Dimname log_softmax.int log_softmax.Dimname cumprod "
    "cumprod.dimname cumsum cumsum.dimname linalg_vector_norm linalg_matrix_norm linalg_matrix_norm.str_ord sum "
    "sum.dim_IntList sum.dim_DimnameList"
).split()
FP32_APPEND_DTYPE = {"norm.Scalar": "ScalarOpt_dtype", "norm.ScalarOpt_dim": "ScalarOpt_dim_dtype"}
PROMOTE = "addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add".split()
BANNED = ("binary_cross_entropy",)

_KEY = "AutocastCPU"


def cuda_policy_table() -> dict[str, str]:
    table = {name: "lower" for name in LOWER_PRECISION}
    table.update({name: "fp32" for name in FP32})
    table.update({name: "fp32_set_opt_dtype" for name in FP32_SET_OPT_DTYPE})
    table.update({name: "fp32_append_dtype" for name in FP32_APPEND_DTYPE})
    table.update({name: "promote" for name in PROMOTE})
    table.update({name: "banned" for name in BANNED})
    return table


def _has_kernel(name: str, key: str) -> bool:
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", key)
    except RuntimeError:  # the operator does not exist in this build
        return False


@functools.lru_cache(maxsize=1)
def registered_autocast_ops() -> tuple[frozenset[str], frozenset[str]]:
    """(ops with an AutocastCUDA kernel, ops with an AutocastCPU kernel) in this torch build, without 'aten::'."""
    cuda, cpu = set(), set()
    for full in torch._C._dispatch_get_all_op_names():
        if not full.startswith("aten::"):
            continue
        name = full[len("aten::"):]
        if torch._C._dispatch_has_kernel_for_dispatch_key(full, "AutocastCUDA"):
            cuda.add(name)
        if torch._C._dispatch_has_kernel_for_dispatch_key(full, _KEY):
            cpu.add(name)
    return frozenset(cuda), frozenset(cpu)


def _op(name: str):
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _eligible(t: object) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64


class CudaAutocast:
    """Makes `torch.autocast("cpu", dtype)` follow CUDA's op lists and weight-cast cache.

    Python kernels replace the AutocastCPU kernels for the duration of the context (ops CUDA does not list fall
    through), so casts stay above autograd exactly as in C++ autocast: ops save their low-precision inputs.
    """

    def __init__(self) -> None:
        self.cache_enabled = True  # the tracer turns it off outside forward (CUDA clears it at autocast exit)
        self._cache: dict[int, tuple[weakref.ref, torch.Tensor]] = {}
        self._lib: torch.library.Library | None = None
        self.unclassified: list[str] = []

    # --- casting rules (autocast_mode.h: cached_cast, prioritize, set_opt_dtype) ---------------------------
    def _cast(self, value, dtype: torch.dtype, lower: torch.dtype):
        if isinstance(value, list | tuple):
            return type(value)(self._cast(v, dtype, lower) for v in value)
        if isinstance(value, dict):
            return {k: self._cast(v, dtype, lower) for k, v in value.items()}
        if not _eligible(value) or value.dtype == dtype:
            return value
        can_cache = (self.cache_enabled and dtype == lower and value.dtype == torch.float32 and value.requires_grad
                     and value.is_leaf and not value._is_view())
        if can_cache:
            hit = self._cache.get(id(value))
            if hit is not None and hit[0]() is value:
                return hit[1]
        cast = value.to(dtype)
        if can_cache:
            self._cache[id(value)] = (weakref.ref(value), cast)
        return cast

    def clear_cache(self) -> None:
        self._cache.clear()

    def _kernel(self, name: str, policy: str) -> Callable:
        op = _op(name)
        exclude = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
        dtype_index = next((i for i, a in enumerate(op._schema.arguments) if a.name == "dtype"), None)

        def kernel(*args, **kwargs):
            lower = torch.get_autocast_dtype("cpu")
            with torch._C._ExcludeDispatchKeyGuard(exclude):
                if policy == "lower":
                    return op(*self._cast(args, lower, lower), **self._cast(kwargs, lower, lower))
                if policy == "fp32":
                    return op(*self._cast(args, torch.float32, lower), **self._cast(kwargs, torch.float32, lower))
                if policy == "fp32_set_opt_dtype":
                    if args and _eligible(args[0]):
                        args = list(args)
                        if dtype_index is not None and len(args) > dtype_index:
                            args[dtype_index] = torch.float32 if args[dtype_index] is None else args[dtype_index]
                        elif kwargs.get("dtype") is None:
                            kwargs = {**kwargs, "dtype": torch.float32}
                    return op(*args, **kwargs)
                if policy == "fp32_append_dtype":
                    out_type = torch.float32 if _eligible(args[0]) else args[0].dtype
                    target = getattr(torch.ops.aten.norm, FP32_APPEND_DTYPE[name])
                    return target(*args, **kwargs, dtype=out_type)
                if policy == "promote":
                    to = lower
                    for t in _tensors((args, kwargs)):
                        if _eligible(t) and torch.float32 in (to, t.dtype):
                            to = torch.float32
                    return op(*self._cast(args, to, lower), **self._cast(kwargs, to, lower))
                raise RuntimeError(
                    f"{name} is unsafe to autocast on CUDA (torch raises here too): use the *_with_logits loss"
                )

        return kernel

    def __enter__(self) -> CudaAutocast:
        cuda_ops, cpu_ops = registered_autocast_ops()
        table = cuda_policy_table()
        self.unclassified = sorted(cuda_ops - set(table))
        lib = self._lib = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": intended, and undone
            for name, policy in table.items():
                if name in cuda_ops:
                    lib.impl(name, self._kernel(name, policy), _KEY)
            for name in sorted(cpu_ops - cuda_ops):
                lib.impl(name, torch.library.fallthrough_kernel, _KEY)
        return self

    def __exit__(self, *exc) -> None:
        self.clear_cache()
        if self._lib is not None:
            self._lib._destroy()
            self._lib = None


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        yield from _tensors(list(value.values()))


# --- SDPA as CUDA's flash / memory-efficient kernels --------------------------------------------------------
def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def sdpa_flops(q_shape, k_shape, v_shape) -> int:
    """QK^T and PV, 2 FLOPs per multiply-add; causal masking not discounted (as torch's CUDA SDPA formulas)."""
    return 2 * math.prod(q_shape[:-2]) * q_shape[-2] * k_shape[-2] * (q_shape[-1] + v_shape[-1])


def _heads_major(like: torch.Tensor, last: int) -> torch.Tensor:
    """An (..., heads, seq, last) result laid out as (..., seq, heads, last), as the CUDA kernels write it: the
    usual transpose(1, 2).reshape(b, s, h) after attention is then a view, not a copy."""
    if like.dim() < 3:
        return like.new_empty((*like.shape[:-1], last))
    *lead, heads, seq, _ = like.shape
    return like.new_empty((*lead, seq, heads, last)).transpose(-3, -2)


def _nbytes(*tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


class _FlashLikeSDPA(torch.autograd.Function):
    """Allocates what CUDA's fused SDPA allocates (no s x s scores, no dropout mask): forward keeps q, k, v, out and
    a float32 logsumexp; backward adds FlashAttention-2's dq accumulator and softmax_d (mem-efficient: delta)."""

    @staticmethod
    def forward(ctx, q, k, v, mask, flash: bool, on_flops: Callable[[int, int], None]):
        out = _heads_major(q, v.shape[-1])
        rows = q.shape[-2] if flash else _round_up(q.shape[-2], 32)
        lse = q.new_empty((*q.shape[:-1][:-1], rows), dtype=torch.float32)
        ctx.save_for_backward(q, k, v, out, lse, mask)
        ctx.flash, ctx.on_flops = flash, on_flops
        # one fused kernel: reads q, k, v (and a mask), writes out and the logsumexp
        on_flops(sdpa_flops(q.shape, k.shape, v.shape), _nbytes(q, k, v, mask, out, lse))
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, _out, _lse, mask = ctx.saved_tensors
        *lead, heads, s_q, d = q.shape
        if ctx.flash:
            temps = [q.new_empty((*lead, heads, _round_up(s_q, 128)), dtype=torch.float32),
                     q.new_empty((*lead, _round_up(s_q, 128), heads, _round_up(d, 32)), dtype=torch.float32)]
        else:
            temps = [q.new_empty((*lead, heads, _round_up(s_q, 32)), dtype=torch.float32)]
        grads = _heads_major(q, q.shape[-1]), _heads_major(k, k.shape[-1]), _heads_major(v, v.shape[-1])
        grad_mask = torch.empty_like(mask) if mask is not None and ctx.needs_input_grad[3] else None
        del temps
        # reads q, k, v, out, grad_out and the logsumexp; writes dq, dk, dv
        ctx.on_flops(2 * sdpa_flops(q.shape, k.shape, v.shape), _nbytes(q, k, v, _out, _lse, grad_out, *grads))
        return (*grads, grad_mask, None, None)


def emulated_sdpa(on_flops: Callable[[int, int], None], query, key, value, attn_mask=None, dropout_p=0.0,
                  is_causal=False, scale=None, enable_gqa=False):
    del dropout_p, is_causal, scale, enable_gqa  # change no allocation in the fused kernels (rng state only)
    if torch.is_autocast_enabled("cpu"):  # CUDA autocast lists SDPA as lower-precision
        dtype = torch.get_autocast_dtype("cpu")
        query, key, value = (t.to(dtype) if _eligible(t) else t for t in (query, key, value))
        if _eligible(attn_mask):
            attn_mask = attn_mask.to(dtype)
    if isinstance(attn_mask, torch.Tensor) and attn_mask.dtype == torch.bool:
        # torch turns a boolean mask into an additive float bias of the mask's shape for the mem-efficient kernel
        attn_mask = torch.zeros(attn_mask.shape, dtype=query.dtype)
    flash = (query.dtype in (torch.float16, torch.bfloat16) and attn_mask is None and query.shape[-1] <= 256
             and query.shape[-1] % 8 == 0)
    return _FlashLikeSDPA.apply(query, key, value, attn_mask, flash, on_flops)


# --- the function-level pieces: SDPA and dropout swapped in torch.nn.functional, and a CUDA-device guard --------
@contextlib.contextmanager
def cuda_functional(on_flops: Callable[[int, int], None]):
    """Swap F.scaled_dot_product_attention and F.dropout for their CUDA-memory twins while tracing.

    Module attributes rather than a TorchFunctionMode: a mode is popped while its handler runs, so it would miss
    the calls made inside loss.backward() (checkpoint recompute) and inside other torch.nn.functional code
    (nn.MultiheadAttention looks both names up in the module at call time).
    """
    saved = F.scaled_dot_product_attention, F.dropout
    F.scaled_dot_product_attention = functools.partial(emulated_sdpa, on_flops)
    F.dropout = _dropout
    try:
        yield
    finally:
        F.scaled_dot_product_attention, F.dropout = saved


def _dropout(input, p=0.5, training=True, inplace=False):
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    out, _mask = torch.native_dropout(input, p, True)  # CUDA's fused dropout: the saved mask is bool
    return input.copy_(out) if inplace else out


def _device_type(value) -> str | None:
    if isinstance(value, torch.device):
        return value.type
    if isinstance(value, int) and not isinstance(value, bool):
        return "cuda"
    if isinstance(value, str):
        return value.split(":")[0]
    return None


class DeviceRequestError(RuntimeError):
    """The model asked for a non-CPU device while being traced (fake CUDA tensors would abort the interpreter)."""


class DeviceGuardMode(TorchFunctionMode):
    """Refuses any request for a non-CPU device (Tensor.cuda, .to("cuda"), device= arguments) before fake mode
    turns it into a fake CUDA tensor, whose first autograd-recording op aborts the interpreter."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        device = kwargs.get("device")
        if func is torch.Tensor.cuda:
            raise DeviceRequestError("Tensor.cuda() was called")
        candidates = [device, *args[1:]] if func is torch.Tensor.to else [device]
        bad = [c for c in candidates if _device_type(c) not in (None, "cpu", "meta")]
        if bad and (func is torch.Tensor.to or device is not None):
            raise DeviceRequestError(f"{getattr(func, '__name__', func)} asked for device {bad[0]!r}")
        return func(*args, **kwargs)
