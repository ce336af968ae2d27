"""Precision modes: fp32 (IEEE everywhere), tf32, fp16 autocast + GradScaler, bf16 autocast; TF32 flags set and recorded."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from planner.vocab import PRECISIONS, Reason


@dataclass(frozen=True)
class PrecisionPlan:
    """How one precision runs on one device. `skip_reason` set = cannot run here (status skipped)."""

    name: str
    device_type: str
    fp32_mode: str                      # "ieee" or "tf32": matmul and cuDNN conv/rnn flags for fp32 tensors
    autocast_dtype: object | None       # torch.float16 / torch.bfloat16 / None
    use_scaler: bool
    note: Reason | None = None
    skip_reason: Reason | None = None

    def autocast(self):
        import torch

        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device_type, dtype=self.autocast_dtype)

    def make_scaler(self):
        """A GradScaler for fp16, else None."""
        if not self.use_scaler:
            return None
        import torch

        return torch.amp.GradScaler(self.device_type)


def uses_new_fp32_api(torch_mod) -> bool:
    """torch >= 2.9 has per-backend `fp32_precision`; mixing it with the legacy allow_tf32 getters raises."""
    cudnn_conv = getattr(torch_mod.backends.cudnn, "conv", None)
    return hasattr(torch_mod.backends, "fp32_precision") and hasattr(cudnn_conv, "fp32_precision")


def set_fp32_mode(mode: str, torch_mod=None) -> dict:
    """Set TF32 use for fp32 matmuls AND cuDNN convolutions/RNNs; return the flags read back.

    `set_float32_matmul_precision("highest")` alone leaves cuDNN convolutions on TF32 (docs/methods.md#measuring), so the
    conv flag is set explicitly. Only the API family this torch version prefers is touched.
    """
    if mode not in ("ieee", "tf32"):
        raise ValueError(f"fp32 mode must be ieee or tf32, got {mode!r}")
    if torch_mod is None:
        import torch as torch_mod
    b = torch_mod.backends
    if uses_new_fp32_api(torch_mod):
        b.cuda.matmul.fp32_precision = mode
        b.cudnn.conv.fp32_precision = mode
        b.cudnn.rnn.fp32_precision = mode
    else:
        allow = mode == "tf32"
        b.cuda.matmul.allow_tf32 = allow
        b.cudnn.allow_tf32 = allow
    return read_fp32_flags(torch_mod)


def read_fp32_flags(torch_mod=None) -> dict:
    """The TF32-related flags as this torch version exposes them (never mixing the two API families)."""
    if torch_mod is None:
        import torch as torch_mod
    b = torch_mod.backends
    if uses_new_fp32_api(torch_mod):
        flags = {
            "api": "fp32_precision",
            "global": b.fp32_precision,
            "cuda.matmul": b.cuda.matmul.fp32_precision,
            "cudnn.conv": b.cudnn.conv.fp32_precision,
            "cudnn.rnn": b.cudnn.rnn.fp32_precision,
        }
        mkldnn_matmul = getattr(getattr(b.mkldnn, "matmul", None), "fp32_precision", None)
        if mkldnn_matmul is not None:
            flags["mkldnn.matmul"] = mkldnn_matmul
        return flags
    return {
        "api": "allow_tf32",
        "cuda.matmul.allow_tf32": bool(b.cuda.matmul.allow_tf32),
        "cudnn.allow_tf32": bool(b.cudnn.allow_tf32),
        "float32_matmul_precision": torch_mod.get_float32_matmul_precision(),
    }


def _cpu_fp16_autocast_supported(torch_mod) -> Reason | None:
    """None if CPU autocast to fp16 works with a CPU GradScaler, else the reason it does not."""
    try:
        with torch_mod.autocast(device_type="cpu", dtype=torch_mod.float16):
            out = torch_mod.mm(torch_mod.ones(2, 2), torch_mod.ones(2, 2))
        if out.dtype != torch_mod.float16:
            return Reason("cpu_fp16_not_float16", torch=str(torch_mod.__version__))
        torch_mod.amp.GradScaler("cpu")
    except Exception as exc:  # noqa: BLE001 - any failure means "not supported here"
        return Reason("cpu_fp16_unsupported", torch=str(torch_mod.__version__), error=str(exc))
    return None


def plan_for(name: str, device_type: str, torch_mod=None) -> PrecisionPlan:
    """The PrecisionPlan for a precision name on 'cuda' or 'cpu'."""
    if name not in PRECISIONS:
        raise ValueError(f"unknown precision {name!r}; expected one of {', '.join(PRECISIONS)}")
    if torch_mod is None:
        import torch as torch_mod
    if name == "fp32":
        return PrecisionPlan(name, device_type, "ieee", None, False)
    if name == "tf32":
        note = None
        if device_type == "cpu":
            note = Reason("tf32_on_cpu")
            return PrecisionPlan(name, device_type, "ieee", None, False, note=note)
        return PrecisionPlan(name, device_type, "tf32", None, False)
    if name == "bf16":
        return PrecisionPlan(name, device_type, "ieee", torch_mod.bfloat16, False)
    # fp16: autocast + GradScaler (dynamic loss scaling).
    skip = _cpu_fp16_autocast_supported(torch_mod) if device_type == "cpu" else None
    return PrecisionPlan(name, device_type, "ieee", torch_mod.float16, True, skip_reason=skip)
