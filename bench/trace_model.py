"""Training set-ups applied to a model before tracing: frozen layers, LoRA adapters, checkpointing, optimizers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from bench.trace_core import StorageTracker, to_fake
from planner.inputs.errors import InputError
from planner.vocab import TRACEABLE_OPTIMIZERS

SOURCE = "bench trace"
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
ATTENTION_WORDS = ("attn", "attention")


class SgdOptions(TypedDict, total=False):
    lr: float
    momentum: float
    weight_decay: float


class AdamOptions(TypedDict, total=False):  # Adam, AdamW and Adafactor
    lr: float
    weight_decay: float


# Hyper-parameters only matter where they change allocations (weight decay adds a foreach temporary for SGD).
SGD_OPTIONS: dict[str, SgdOptions] = {
    "sgd": {"lr": 0.1},
    "sgd_momentum": {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4},  # torchvision's ResNet recipe
}
ADAM_OPTIONS: dict[str, AdamOptions] = {
    "adam": {"lr": 1e-3},
    "adamw": {"lr": 1e-3, "weight_decay": 0.01},
    "adafactor": {"lr": 1e-2},
}
OPTIMIZER_OPTIONS: dict[str, SgdOptions | AdamOptions] = {**SGD_OPTIONS, **ADAM_OPTIONS}


@dataclass(frozen=True)
class Adapter:
    kind: str  # lora
    rank: int
    base_dtype: str | None  # None: the precision's compute dtype (fp32 for fp32/tf32 runs)
    targets: str = "attention"

    def describe(self, precision: str) -> dict:
        return {"kind": self.kind, "rank": self.rank, "targets": self.targets,
                "base_dtype": self.resolved_base_dtype(precision)}

    def resolved_base_dtype(self, precision: str) -> str:
        return self.base_dtype or (precision if precision in ("bf16", "fp16") else "fp32")


def parse_adapter(text: str) -> Adapter:
    """'lora:16' or 'lora:16:bf16'; raises ValueError with what was expected."""
    parts = text.split(":")
    expected = "lora:RANK or lora:RANK:BASE_DTYPE with BASE_DTYPE one of " + ", ".join(DTYPES)
    if parts[0] == "qlora":
        expected += " (qlora needs bitsandbytes' 4-bit CUDA kernels, which do not run on fake tensors: trace " \
                    "lora:R:bf16 and let the planner price the nf4 base weights)"
    if (parts[0] != "lora" or len(parts) not in (2, 3) or not parts[1].isdigit() or int(parts[1]) < 1
            or (len(parts) == 3 and parts[2] not in DTYPES)):
        raise InputError(SOURCE, "--adapter", text, expected)
    return Adapter("lora", int(parts[1]), parts[2] if len(parts) == 3 else None)


class LoRALinear(nn.Module):
    """Hu et al. 2021: y = W x + B A x; W frozen, A (r x in) and B (out x r) trainable."""

    def __init__(self, base: nn.Linear, rank: int):
        super().__init__()
        self.base = base
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features, device=base.weight.device))
        self.lora_B = nn.Parameter(torch.empty(base.out_features, rank, device=base.weight.device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + F.linear(F.linear(x, self.lora_A), self.lora_B)


def add_lora(model: nn.Module, rank: int) -> int:
    """Freeze every parameter, then wrap the attention projections (Linear layers under a module whose name
    contains attn/attention). Returns how many layers were adapted."""
    for p in model.parameters():
        p.requires_grad_(False)
    targets = [(name, m) for name, m in model.named_modules()
               if isinstance(m, nn.Linear) and any(w in name.lower() for w in ATTENTION_WORDS)]
    for name, linear in targets:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, LoRALinear(linear, rank))
    return len(targets)


def freeze_fraction(model: nn.Module, fraction: float) -> None:
    """Freeze the first parameters in module order (the lowest layers) until `fraction` of all are frozen."""
    params = list(model.parameters())
    limit = fraction * sum(p.numel() for p in params)
    seen = 0
    for p in params:
        if seen < limit:
            p.requires_grad_(False)
        seen += p.numel()


def find_blocks(model: nn.Module) -> list[nn.Module]:
    """The repeated blocks: children of the outermost ModuleList/Sequential containers whose children are all
    composite modules (transformer layers, ResNet blocks)."""
    found: list[nn.Module] = []

    def visit(module: nn.Module) -> None:
        children = list(module.children())
        if (isinstance(module, nn.ModuleList | nn.Sequential) and len(children) >= 2
                and all(any(True for _ in c.children()) for c in children)):
            found.extend(children)
            return
        for c in children:
            visit(c)

    visit(model)
    return found


def enable_checkpointing(model: nn.Module, tracker: StorageTracker) -> int:
    """Wrap each block's forward in non-reentrant activation checkpointing; the recompute in backward is flagged
    so that its FLOPs are not counted as model FLOPs."""
    blocks = find_blocks(model)

    for block in blocks:
        def run(*args, _forward=block.forward, **kwargs):
            recompute = tracker.phase == "backward"
            tracker.recomputing = recompute
            try:
                return _forward(*args, **kwargs)
            finally:
                if recompute:
                    tracker.recomputing = False

        def forward(*args, _run=run, **kwargs):
            return checkpoint(_run, *args, use_reentrant=False, **kwargs)

        block.forward = forward
    return len(blocks)


def make_preparer(*, frozen_fraction: float, adapter: Adapter | None, precision: str,
                  checkpointing: bool) -> Callable[[nn.Module, StorageTracker], nn.Module]:
    def prepare(model: nn.Module, tracker: StorageTracker) -> nn.Module:
        if frozen_fraction > 0:
            freeze_fraction(model, frozen_fraction)
        base_dtype = None
        if adapter is not None:
            if add_lora(model, adapter.rank) == 0:
                raise InputError(SOURCE, "--adapter", f"lora:{adapter.rank}",
                                 "a model with Linear layers under a module named *attn* or *attention*")
            base_dtype = DTYPES[adapter.resolved_base_dtype(precision)]
        model = to_fake(model, (lambda p: base_dtype if (base_dtype and not p.requires_grad
                                                        and p.is_floating_point()) else p.dtype))
        if checkpointing and enable_checkpointing(model, tracker) == 0:
            raise InputError(SOURCE, "--checkpointing", True, "a model with repeated blocks to checkpoint (a "
                             "ModuleList or Sequential of composite layers); this one has none")
        return model

    return prepare


def make_optimizer_factory(name: str, impl: str) -> Callable[[list], torch.optim.Optimizer]:
    if name not in TRACEABLE_OPTIMIZERS:
        hint = " (adam8bit needs bitsandbytes' CUDA kernels; the planner prices its state at 2 B/param)" \
            if name == "adam8bit" else ""
        raise InputError(SOURCE, "--optimizer", name, "one of " + ", ".join(TRACEABLE_OPTIMIZERS) + hint)
    if impl not in ("foreach", "fused") or (impl == "fused" and name == "adafactor"):
        raise InputError(SOURCE, "--optimizer-impl", impl, "foreach, or fused for sgd/sgd_momentum/adam/adamw")
    # CUDA's default is foreach; on CPU torch would pick the per-tensor loop, so ask for it explicitly.
    # None is torch's own default for the flag not asked for.
    foreach, fused = (None, True) if impl == "fused" else (True, None)

    def make(params: list) -> torch.optim.Optimizer:
        if name in SGD_OPTIONS:
            return torch.optim.SGD(params, **SGD_OPTIONS[name], foreach=foreach, fused=fused)
        options = ADAM_OPTIONS[name]
        if name == "adam":
            return torch.optim.Adam(params, **options, foreach=foreach, fused=fused)
        if name == "adamw":
            return torch.optim.AdamW(params, **options, foreach=foreach, fused=fused)
        return torch.optim.Adafactor(params, **options, foreach=foreach)  # fused Adafactor was refused above

    return make

