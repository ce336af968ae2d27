"""Live-storage tracker and the traced training step on CPU fake tensors (no real memory is allocated)."""

from __future__ import annotations

import contextlib
import os
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
    UnsupportedOperatorException,
)
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

from bench.trace_cuda import CudaAutocast, DeviceGuardMode, DeviceRequestError, cuda_functional, sdpa_flops
from planner.inputs.resultfile import ATEN_OP_PHASES, OP_CLASSES

CUDA_BLOCK_BYTES = 512  # the CUDA caching allocator rounds every request up to a multiple of 512 B
_LOCAL_SCALAR = torch.ops.aten._local_scalar_dense.default
# Ops that launch no kernel: views share storage, the empty family only allocates (the planner's launch term counts
# the others, one per traced aten op: a foreach op that launches several kernels counts once).
_NO_KERNEL = {torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default,
              torch.ops.aten.empty_like.default, torch.ops.aten.new_empty.default,
              torch.ops.aten.new_empty_strided.default, torch.ops.aten.lift_fresh.default}


def launches_kernel(func) -> bool:
    """Whether a dispatched op is counted as a kernel: an aten op (prim.device and other metadata queries are not),
    not a view, not an allocation without a fill."""
    return (getattr(func, "namespace", "") == "aten" and not getattr(func, "is_view", False)
            and func not in _NO_KERNEL)


_LOSS_PREFIXES = ("embedding", "_embedding_bag", "nll_loss", "log_softmax", "_log_softmax", "cross_entropy",
                  "binary_cross_entropy", "mse_loss", "smooth_l1_loss")


def op_class(func) -> str:
    """The operator class of a kernel-launching aten op (resultfile.OP_CLASSES): matmul for the ops torch's FLOP
    counter prices that are not attention (mm, addmm, bmm, baddbmm, convolution and its backward), attention for the
    fused SDPA kernels, embedding_loss for embeddings and the loss (log-softmax, NLL), elementwise for the rest
    (activations, normalisation, softmax, dropout, residual adds, copies and casts): the memory-bound ops."""
    name = func._overloadpacket.__name__
    if "attention" in name:
        return "attention"
    if func._overloadpacket in flop_registry:
        return "matmul"
    if name.startswith(_LOSS_PREFIXES):
        return "embedding_loss"
    return "elementwise"


def _tensor_bytes(tree) -> int:
    """Bytes of every tensor in an op's arguments or results, at their logical size (numel x element size)."""
    return sum(t.numel() * t.element_size() for t in tree_leaves(tree) if isinstance(t, torch.Tensor))


class UntraceableModelError(Exception):
    """The step cannot run on fake tensors: it needs tensor values (data-dependent control flow or shapes), an
    operator without a fake implementation, or a CUDA device. `message(model)` is what a user reads."""

    def __init__(self, kind: str, operation: str, location: str | None):
        self.kind, self.operation, self.location = kind, operation, location
        super().__init__(self.message("this model"))

    def message(self, model: str) -> str:
        where = f"\n  at: {self.location}" if self.location else ""
        run = f"python -m bench run --model {model}"
        if self.kind == "data":
            return (f"cannot trace {model}: its training step needs tensor values\n  operation: {self.operation}"
                    f"{where}\nTracing uses fake tensors, which have shapes but no values, so data-dependent "
                    "control flow cannot be followed. Measure the model on a GPU instead: " + run)
        if self.kind == "operator":
            return (f"cannot trace {model}: an operator has no fake-tensor implementation\n  operation: "
                    f"{self.operation}{where}\nMeasure the model on a GPU instead: {run}")
        return (f"cannot trace {model}: it asks for a GPU device\n  operation: {self.operation}{where}\nThe "
                "tracer runs on CPU fake tensors and never creates CUDA tensors: build the model and the batch on "
                f"the device they are given, or measure the model on a GPU: {run}")


def _cpu_sdpa_flops(*args, out_shape=None, **kwargs) -> int:
    q, k, v = (a.shape for a in args[:3])
    return sdpa_flops(q, k, v)


def _cpu_sdpa_backward_flops(*args, out_shape=None, **kwargs) -> int:
    q, k, v = (a.shape for a in args[1:4])
    return 2 * sdpa_flops(q, k, v)


# FlopCounterMode counts CPU's fused SDPA kernels as 0 (docs/methods.md#step-time): add them analytically.
_EXTRA_FLOPS = {
    getattr(torch.ops.aten, name): fn for name, fn in (
        ("_scaled_dot_product_flash_attention_for_cpu", _cpu_sdpa_flops),
        ("_scaled_dot_product_flash_attention_for_cpu_backward", _cpu_sdpa_backward_flops),
    ) if hasattr(torch.ops.aten, name)
}


class StorageTracker(TorchDispatchMode):
    """Live bytes of untyped storages: each new storage an op returns is added, and removed again by a weakref
    finalizer when the storage dies. Storages alive before tracking (weights, buffers, optimizer state) are added
    as static; views and in-place results share a known storage and cost nothing.

    Sits above FakeTensorMode on the mode stack, so it sees the fake outputs of every op, including those of
    the autograd engine and the optimizer. It also counts FLOPs with torch's FlopCounterMode formulas.
    """

    def __init__(self, round_to: int = 1):
        super().__init__()
        self.round_to = round_to
        self.phase = "setup"
        self.recomputing = False
        self.flops = 0
        self.ops = dict.fromkeys(ATEN_OP_PHASES, 0)  # traced aten ops that launch a kernel, per phase
        # forward + backward by operator class, recompute included (time, not the model's FLOPs)
        self.classes = {c: {"flops": 0, "bytes": 0, "ops": 0} for c in OP_CLASSES}
        self.current = 0
        self.peak = 0
        self.static = {"weights": 0, "optimizer": 0}
        self._static_keys: set[int] = set()
        self._live: dict[int, tuple[int, int]] = {}  # storage _cdata -> (token, bytes)
        self._tokens = 0

    def _round(self, n: int) -> int:
        if n <= 0 or self.round_to <= 1:
            return max(n, 0)
        return -(-n // self.round_to) * self.round_to

    def _add(self, n: int) -> None:
        self.current += n
        self.peak = max(self.peak, self.current)

    def add_static(self, tensor: torch.Tensor, part: str) -> None:
        st = tensor.untyped_storage()
        if st._cdata not in self._static_keys:
            self._static_keys.add(st._cdata)
            n = self._round(st.nbytes())
            self.static[part] += n
            self._add(n)

    def storage_bytes(self, tensors) -> int:
        """Bytes of the distinct storages behind `tensors` (e.g. the .grad of every parameter)."""
        seen = {t.untyped_storage()._cdata: t.untyped_storage().nbytes() for t in tensors if t is not None}
        return sum(self._round(n) for n in seen.values())

    def add_flops(self, n: int, bytes_moved: int = 0) -> None:
        """FLOPs of a kernel the dispatcher does not see as one (the emulated fused SDPA): attention."""
        if self.phase in ("forward", "backward"):
            c = self.classes["attention"]
            c["flops"], c["bytes"], c["ops"] = c["flops"] + int(n), c["bytes"] + int(bytes_moved), c["ops"] + 1
            if not self.recomputing:
                self.flops += int(n)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _LOCAL_SCALAR and self.phase in ("setup", "optimizer"):
            # Host syncs inside optimizers (GradScaler's found_inf, Adafactor's norms) cannot steer memory: a
            # placeholder value lets the step run. In forward/backward the same call is data-dependent.
            try:
                return func(*args, **kwargs)
            except DataDependentOutputException:
                return False if args[0].dtype == torch.bool else 0
        out = func(*args, **kwargs)
        if self.phase == "setup":  # building the fake model and the optimizer state: registered as static
            return out
        if self.phase in self.ops and launches_kernel(func):
            self.ops[self.phase] += 1
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self._track(t.untyped_storage())
        if self.phase in ("forward", "backward"):
            packet = func._overloadpacket
            flops = 0
            if packet in flop_registry:
                flops = int(flop_registry[packet](*args, **kwargs, out_val=out))
            elif packet in _EXTRA_FLOPS:
                flops = int(_EXTRA_FLOPS[packet](*args, **kwargs))
            if not self.recomputing:
                self.flops += flops
            if launches_kernel(func):
                c = self.classes[op_class(func)]
                c["flops"] += flops
                c["bytes"] += _tensor_bytes((args, kwargs)) + _tensor_bytes(out)
                c["ops"] += 1
        return out

    def _track(self, st) -> None:
        key = st._cdata
        if key in self._live or key in self._static_keys:
            return
        self._tokens += 1
        n = self._round(st.nbytes())
        self._live[key] = (self._tokens, n)
        self._add(n)
        weakref.finalize(st, self._free, key, self._tokens)

    def _free(self, key: int, token: int) -> None:
        entry = self._live.get(key)
        if entry is not None and entry[0] == token:  # addresses are reused: only the storage we saw
            del self._live[key]
            self.current -= entry[1]


@dataclass(frozen=True)
class StepPlan:
    """Everything the traced step needs; `build` returns (model on meta or CPU, make_batch, loss_fn)."""

    build: Callable[[], tuple[nn.Module, Callable, Callable]]
    prepare: Callable[[nn.Module, StorageTracker], nn.Module]  # meta/CPU model -> fake model (calls to_fake)
    make_optimizer: Callable[[list[nn.Parameter]], torch.optim.Optimizer]
    batch_size: int
    autocast_dtype: torch.dtype | None
    grad_scaler: bool
    emulate_cuda: bool


@dataclass
class StepTrace:
    """A traced step. The parts follow bench/harness.py's definitions for measured files, so traced and measured
    rows mean the same: weights (parameters + buffers), grads (.grad after backward), optimizer (state),
    activations (allocated during forward, i.e. live after forward minus before), static (live after the step
    and zero_grad(set_to_none=True): weights + optimizer + the batch) and transients = peak - static -
    max(activations, grads)."""

    peak_bytes: int
    static_bytes: int
    weights_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    flops: int
    params: int
    trainable_params: int
    notes: list[str] = field(default_factory=list)
    aten_ops: dict[str, int] = field(default_factory=dict)  # kernel-launching aten ops per phase (ATEN_OP_PHASES)
    op_classes: dict[str, dict[str, int]] = field(default_factory=dict)  # forward + backward by class (OP_CLASSES)

    @property
    def transients_bytes(self) -> int:
        return max(0, self.peak_bytes - self.static_bytes - max(self.activations_bytes, self.grads_bytes))

    @property
    def breakdown(self) -> dict[str, int]:
        return {"weights": self.weights_bytes, "grads": self.grads_bytes, "optimizer": self.optimizer_bytes,
                "activations": self.activations_bytes, "transients": self.transients_bytes}


def to_fake(model: nn.Module, dtype_for: Callable[[nn.Parameter], torch.dtype] | None = None) -> nn.Module:
    """Swap every parameter and buffer for an empty CPU tensor (a FakeTensor: call inside FakeTensorMode).
    Shared parameters stay shared."""
    fake_params: dict[int, nn.Parameter] = {}
    fake_buffers: dict[int, torch.Tensor] = {}
    for module in model.modules():
        params, buffers = module._parameters, module._buffers
        for name, p in list(params.items()):
            if p is None:
                continue
            if id(p) not in fake_params:
                new = torch.empty(p.shape, dtype=dtype_for(p) if dtype_for else p.dtype, device="cpu")
                fake_params[id(p)] = nn.Parameter(new, requires_grad=p.requires_grad)
            params[name] = fake_params[id(p)]
        for name, t in list(buffers.items()):
            if t is None:
                continue
            if id(t) not in fake_buffers:
                fake_buffers[id(t)] = torch.empty(t.shape, dtype=t.dtype, device="cpu")
            buffers[name] = fake_buffers[id(t)]
    return model


def _init_optimizer_state(opt: torch.optim.Optimizer, params: list[nn.Parameter]) -> None:
    """One untracked step on zero grads: optimizer state exists before the traced step, as in steady state."""
    for p in params:
        p.grad = torch.zeros_like(p)
    opt.step()
    opt.zero_grad(set_to_none=True)


def _describe_op(exc: Exception) -> str:
    func = getattr(exc, "func", None)
    name = str(func) if func is not None else str(exc)
    if func is _LOCAL_SCALAR:
        return f"{name} (a tensor read as a Python value: `if tensor:`, .item(), int(tensor))"
    if isinstance(exc, DynamicOutputShapeException):
        return f"{name} (its output shape depends on tensor values: nonzero, boolean-mask indexing, unique)"
    return name


def _user_location(tb) -> str | None:
    """The innermost traceback frame outside torch and the tracer: the model code that needed a value."""
    torch_dir = os.path.dirname(torch.__file__)
    here = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(tb) if not f.filename.startswith(torch_dir)
              and not (os.path.dirname(os.path.abspath(f.filename)) == here
                       and os.path.basename(f.filename).startswith("trace"))]
    if not frames:
        return None
    f = frames[-1]
    return f"{f.filename}:{f.lineno} in {f.name}" + (f": {f.line.strip()}" if f.line else "")


def _register_static(tracker: StorageTracker, model: nn.Module, opt: torch.optim.Optimizer | None,
                     emulate_cuda: bool) -> None:
    for t in (*model.parameters(), *model.buffers()):
        tracker.add_static(t, "weights")
    if opt is None:
        return
    # Under CUDA, foreach/for-loop optimizers keep `step` on the host (fused and capturable keep it on device).
    host_steps = emulate_cuda and not (opt.defaults.get("fused") or opt.defaults.get("capturable"))
    for state in opt.state.values():
        for key, value in state.items():
            if isinstance(value, torch.Tensor) and not (key == "step" and host_steps):
                tracker.add_static(value, "optimizer")


def run_traced_step(plan: StepPlan) -> StepTrace:
    """One training step (forward, backward, optimizer.step, zero_grad) on fake tensors under the tracker."""
    tracker = StorageTracker(round_to=CUDA_BLOCK_BYTES if plan.emulate_cuda else 1)
    autocast_rules = CudaAutocast() if (plan.emulate_cuda and plan.autocast_dtype is not None) else None
    functional = cuda_functional(tracker.add_flops) if plan.emulate_cuda else contextlib.nullcontext()
    autocast = (torch.autocast("cpu", dtype=plan.autocast_dtype) if plan.autocast_dtype is not None
                else contextlib.nullcontext())
    model, make_batch, loss_fn = plan.build()  # on the meta device (zoo) before fake mode takes over
    try:
        with FakeTensorMode(), DeviceGuardMode(), functional, tracker, (autocast_rules or contextlib.nullcontext()):
            model = plan.prepare(model, tracker)
            model.train()
            params = list(model.parameters())
            trainable = [p for p in params if p.requires_grad]
            opt = plan.make_optimizer(trainable) if trainable else None
            if opt is not None:
                _init_optimizer_state(opt, trainable)
            _register_static(tracker, model, opt, plan.emulate_cuda)
            scaler = torch.amp.GradScaler("cpu") if plan.grad_scaler else None

            tracker.phase = "batch"  # the harness makes the batch before its step: part of static, not activations
            batch = make_batch(plan.batch_size, torch.device("cpu"))
            before_forward = tracker.current
            tracker.phase = "forward"
            with autocast:
                loss = loss_fn(model, batch)
            activations = tracker.current - before_forward
            if autocast_rules is not None:
                autocast_rules.clear_cache()  # CUDA autocast drops its weight-cast cache at context exit
                autocast_rules.cache_enabled = False  # recompute in backward casts without the cache

            tracker.phase = "backward"
            (scaler.scale(loss) if scaler else loss).backward()
            grads = tracker.storage_bytes(p.grad for p in params)

            tracker.phase = "optimizer"
            if scaler is not None and opt is not None:
                scaler.step(opt)
                scaler.update()
            elif opt is not None:
                opt.step()
            if opt is not None:
                opt.zero_grad(set_to_none=True)
            del loss
            tracker.phase = "done"
            static = tracker.current
    except (DataDependentOutputException, DynamicOutputShapeException) as exc:
        raise UntraceableModelError("data", _describe_op(exc), _user_location(exc.__traceback__)) from None
    except UnsupportedOperatorException as exc:
        raise UntraceableModelError("operator", str(getattr(exc, "func", exc)),
                                    _user_location(exc.__traceback__)) from None
    except DeviceRequestError as exc:
        raise UntraceableModelError("device", str(exc), _user_location(exc.__traceback__)) from None
    notes = []
    if autocast_rules is not None and autocast_rules.unclassified:
        notes.append("ops with a CUDA autocast kernel but no known policy (ran as on CPU): "
                     + ", ".join(autocast_rules.unclassified))
    return StepTrace(
        peak_bytes=tracker.peak, static_bytes=static, weights_bytes=tracker.static["weights"], grads_bytes=grads,
        optimizer_bytes=tracker.static["optimizer"], activations_bytes=activations, flops=tracker.flops,
        params=sum(p.numel() for p in params), trainable_params=sum(p.numel() for p in trainable), notes=notes,
        aten_ops=dict(tracker.ops), op_classes={k: dict(v) for k, v in tracker.classes.items()})
