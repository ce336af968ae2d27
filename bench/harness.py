"""The timing loop: one (precision, batch) training configuration, measured with an injected clock and device."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

import torch

from bench.precision import PrecisionPlan, set_fp32_mode
from bench.stats import step_time_block, summarize
from bench.telemetry import NullSampler, WindowReading
from planner.inputs.reasons import reason_fields, unmeasured_fields
from planner.vocab import Reason, SoftwareStack

CPU_MEMORY_REASON = Reason("cpu_memory")


@dataclass(frozen=True)
class HarnessConfig:
    warmup: int = 10
    steps: int = 30
    phase_steps: int = 5
    set_to_none: bool = True


# ------------------------------------------------------------------ devices (injected)

class ClockTimer:
    """Per-step times from a host clock: right for CPU, whose ops finish before they return."""

    def __init__(self, clock: Callable[[], float], n: int):
        self.clock = clock
        self.starts = [0.0] * n
        self.ends = [0.0] * n

    def start(self, i: int) -> None:
        self.starts[i] = self.clock()

    def stop(self, i: int) -> None:
        self.ends[i] = self.clock()

    def elapsed_s(self) -> list[float]:
        return [e - s for s, e in zip(self.starts, self.ends, strict=True)]


class EventTimer:
    """Per-step CUDA events; read once after the single synchronize that ends the window."""

    def __init__(self, n: int):
        self.starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        self.ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]

    def start(self, i: int) -> None:
        self.starts[i].record()

    def stop(self, i: int) -> None:
        self.ends[i].record()

    def elapsed_s(self) -> list[float]:
        return [s.elapsed_time(e) / 1000.0 for s, e in zip(self.starts, self.ends, strict=True)]


class CpuDevice:
    kind = "cpu"
    sync_method = "host_clock"
    has_memory_stats = False

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.clock = clock
        self.torch_device = torch.device("cpu")

    def synchronize(self) -> None:
        pass

    def step_timer(self, n: int) -> ClockTimer:
        return ClockTimer(self.clock, n)

    def reset_peak(self) -> None:
        pass

    def allocated(self) -> int | None:
        return None

    def max_allocated(self) -> int | None:
        return None

    def max_reserved(self) -> int | None:
        return None

    def empty_cache(self) -> None:
        pass

    def capacity_bytes(self) -> int | None:
        return None

    def is_oom(self, exc: BaseException) -> bool:
        return isinstance(exc, MemoryError) or "can't allocate memory" in str(exc)


class CudaDevice:
    kind = "cuda"
    sync_method = "cuda_events"
    has_memory_stats = True

    def __init__(self, index: int = 0, clock: Callable[[], float] = time.perf_counter):
        self.index = index
        self.clock = clock
        self.torch_device = torch.device("cuda", index)
        torch.cuda.set_device(self.torch_device)

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.torch_device)

    def step_timer(self, n: int) -> EventTimer:
        return EventTimer(n)

    def reset_peak(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.torch_device)

    def allocated(self) -> int:
        return torch.cuda.memory_allocated(self.torch_device)

    def max_allocated(self) -> int:
        return torch.cuda.max_memory_allocated(self.torch_device)

    def max_reserved(self) -> int:
        return torch.cuda.max_memory_reserved(self.torch_device)

    def empty_cache(self) -> None:
        torch.cuda.empty_cache()

    def capacity_bytes(self) -> int:
        """What torch can reserve: free device memory plus what its cache already holds (context excluded)."""
        free, _total = torch.cuda.mem_get_info(self.torch_device)
        return free + torch.cuda.memory_reserved(self.torch_device)

    def is_oom(self, exc: BaseException) -> bool:
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
        text = str(exc)
        return "out of memory" in text or "ALLOC_FAILED" in text


Device: TypeAlias = CpuDevice | CudaDevice  # what the timing loop measures on (tests pass a CpuDevice with a fake clock)


# ------------------------------------------------------------------ one configuration

def tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def optimizer_state_bytes(optimizer) -> int:
    return sum(tensor_bytes(state.values()) for state in optimizer.state.values())


def make_step(workload, plan: PrecisionPlan, optimizer, scaler, batch, finite, set_to_none: bool = True):
    """One optimizer step; `finite` (a bool tensor on the device) accumulates loss finiteness without a sync."""
    model, loss_fn = workload.model, workload.loss_fn

    def step() -> None:
        with plan.autocast():
            loss = loss_fn(model, batch)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad(set_to_none=set_to_none)
        finite.logical_and_(torch.isfinite(loss.detach()).all())

    return step


@dataclass
class RawMeasurement:
    step_times_s: list[float]
    window_s: float
    phases_s: dict
    first_step_peak_bytes: int | None
    static_bytes: int | None
    peak_allocated_bytes: int | None
    peak_reserved_bytes: int | None
    weights_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int | None
    loss_finite: bool
    scale_start: float | None
    scale_end: float | None
    telemetry: WindowReading = field(default_factory=WindowReading)


def _phase_pass(workload, plan, optimizer, scaler, batch, batch_size, n, device, clock, set_to_none):
    """Forward/backward/optimizer times with a sync after each phase (a separate, shorter pass: the syncs expose
    launch latency the timed window hides), host data time, grad bytes and retained forward bytes."""
    model, times = workload.model, {"data": [], "forward": [], "backward": [], "optimizer": []}
    grads_bytes, activations = None, None
    for _ in range(n):
        t0 = clock()
        fresh = workload.make_batch(batch_size, device.torch_device)
        device.synchronize()
        times["data"].append(clock() - t0)
        del fresh
        before = device.allocated()
        t0 = clock()
        with plan.autocast():
            loss = workload.loss_fn(model, batch)
        device.synchronize()
        t1 = clock()
        after = device.allocated()
        if before is not None and after is not None:
            activations = max(activations or 0, after - before)
        (scaler.scale(loss) if scaler is not None else loss).backward()
        device.synchronize()
        t2 = clock()
        grads_bytes = tensor_bytes(p.grad for p in model.parameters() if p.grad is not None)
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad(set_to_none=set_to_none)
        del loss
        device.synchronize()
        t3 = clock()
        times["forward"].append(t1 - t0)
        times["backward"].append(t2 - t1)
        times["optimizer"].append(t3 - t2)
    medians = {k: summarize(v)["median"] for k, v in times.items() if v}
    return medians, grads_bytes, activations


def measure(workload, plan: PrecisionPlan, batch_size: int, make_optimizer: Callable, config: HarnessConfig,
            device, clock: Callable[[], float] | None = None, sampler=None) -> RawMeasurement:
    """Warm up, time `config.steps` steps (one sync at the end), then a short phase pass. Raises on OOM."""
    clock = clock or device.clock
    sampler = sampler or NullSampler(Reason("not_measured"))
    set_fp32_mode(plan.fp32_mode)
    model = workload.model
    model.train()
    device.empty_cache()
    batch = workload.make_batch(batch_size, device.torch_device)
    optimizer = make_optimizer([p for p in model.parameters() if p.requires_grad])
    scaler = plan.make_scaler()
    finite = torch.ones((), dtype=torch.bool, device=device.torch_device)
    step = make_step(workload, plan, optimizer, scaler, batch, finite, config.set_to_none)

    device.synchronize()
    device.reset_peak()
    step()  # the first step also allocates optimizer state: its peak is reported on its own
    device.synchronize()
    first_peak = device.max_allocated()
    for _ in range(max(0, config.warmup - 1)):
        step()
    device.synchronize()
    static = device.allocated()
    device.empty_cache()
    device.reset_peak()

    scale_start = scaler.get_scale() if scaler is not None else None
    timer = device.step_timer(config.steps)
    sampler.start()
    try:
        t0 = clock()
        for i in range(config.steps):
            timer.start(i)
            step()
            timer.stop(i)
        device.synchronize()
        window = clock() - t0
    finally:
        reading = sampler.stop()  # an OOM inside the window must not leave the sampler thread running
    scale_end = scaler.get_scale() if scaler is not None else None
    times = timer.elapsed_s()
    peak_alloc, peak_res = device.max_allocated(), device.max_reserved()

    phases, grads_bytes, activations = _phase_pass(
        workload, plan, optimizer, scaler, batch, batch_size, min(config.phase_steps, config.steps), device,
        clock, config.set_to_none)
    weights = tensor_bytes(model.parameters()) + tensor_bytes(model.buffers())
    if grads_bytes is None:  # no phase pass: grads have their parameters' sizes (same dtype under torch AMP)
        grads_bytes = tensor_bytes(p for p in model.parameters() if p.requires_grad)
    return RawMeasurement(
        step_times_s=times, window_s=window, phases_s=phases, first_step_peak_bytes=first_peak,
        static_bytes=static, peak_allocated_bytes=peak_alloc, peak_reserved_bytes=peak_res,
        weights_bytes=weights, grads_bytes=grads_bytes, optimizer_bytes=optimizer_state_bytes(optimizer),
        activations_bytes=activations, loss_finite=bool(finite.item()), scale_start=scale_start,
        scale_end=scale_end, telemetry=reading,
    )


def release(model, device) -> None:
    """Free what a failed step left behind; call OUTSIDE the except block (its traceback pins the tensors)."""
    for p in model.parameters():
        p.grad = None
    gc.collect()
    device.empty_cache()


def run_config(workload, plan: PrecisionPlan, batch_size: int, make_optimizer: Callable, config: HarnessConfig,
               device, clock=None, sampler=None) -> tuple[str, Reason | None, RawMeasurement | None]:
    """(status, reason, raw): an OOM or a failing step becomes a status, never an exception (Ctrl-C still is)."""
    if plan.skip_reason:
        return "skipped", plan.skip_reason, None
    try:
        raw = measure(workload, plan, batch_size, make_optimizer, config, device, clock, sampler)
    except Exception as exc:  # noqa: BLE001 - one bad configuration never ends the sweep
        status = "oom" if device.is_oom(exc) else "error"
        reason = f"{exc.__class__.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    else:
        return "ok", None, raw
    release(workload.model, device)
    return status, Reason("step_failed", error=reason[:500]), None


# ------------------------------------------------------------------ the result-file record

@dataclass(frozen=True)
class RecordContext:
    """What turns a raw measurement into a result-file row: FLOPs, the peak for MFU, and why things are null."""

    flops_per_sample: float | None
    peak_tflops: float | None
    peak_key: str | None
    mfu_unmeasured_reason: Reason | None
    device_kind: str


def memory_breakdown(raw: RawMeasurement, has_memory_stats: bool) -> tuple[dict, dict]:
    """weights/grads/optimizer: tensor sizes. activations: allocated after forward minus before (phase pass).
    transients: what the peak holds beyond the larger of (static + activations) and (static + grads), where
    static is allocated after a full step (weights, optimizer state, the batch)."""
    parts = {"weights": raw.weights_bytes, "grads": raw.grads_bytes, "optimizer": raw.optimizer_bytes,
             "activations": None, "transients": None}
    unmeasured: dict[str, Reason] = {}
    if has_memory_stats and raw.activations_bytes is not None and raw.static_bytes is not None:
        parts["activations"] = raw.activations_bytes
        held = raw.static_bytes + max(raw.activations_bytes, raw.grads_bytes)
        parts["transients"] = max(0, (raw.peak_allocated_bytes or 0) - held)
    else:
        why = CPU_MEMORY_REASON if not has_memory_stats else Reason("no_phase_pass_memory")
        unmeasured["memory_breakdown_bytes.activations"] = why
        unmeasured["memory_breakdown_bytes.transients"] = why
    return parts, unmeasured


# The stack this harness measures (a measurement's provenance.stack): a hand-written eager PyTorch loop, no
# torch.compile (docs/schemas.md#bench-result, issue 32).
STACK: SoftwareStack = "pytorch_eager"
MEASURED_PROVENANCE = {"kind": "measured", "stack": STACK}


def to_record(precision: str, batch_size: int, status: str, reason: Reason | None, raw: RawMeasurement | None,
              ctx: RecordContext, steps: int, has_memory_stats: bool, note: Reason | None = None) -> dict:
    """One `measurements[]` row (schema /2): every null numeric field has its reason in `unmeasured`; the step
    times are kept raw, and `noisy` says their IQR is over 10% of the median."""
    row = {"source": "measured", "precision": precision, "batch_size": batch_size, "status": status,
           **reason_fields(reason or note), "provenance": dict(MEASURED_PROVENANCE)}
    if raw is None:
        return row
    stats, noisy = step_time_block(raw.step_times_s)
    median = stats["median"]
    unmeasured: dict[str, Reason] = {}
    row.update({"step_time_s": stats, "noisy": noisy, "phases_s": raw.phases_s,
                "samples_per_s": batch_size / median})
    if not raw.phases_s:
        unmeasured["phases_s"] = Reason("no_phase_pass")
    for key in ("peak_allocated_bytes", "peak_reserved_bytes", "static_bytes", "first_step_peak_bytes"):
        row[key] = getattr(raw, key)
        if row[key] is None:
            unmeasured[key] = CPU_MEMORY_REASON
    row["device_used_bytes"] = raw.telemetry.device_used_bytes
    row["memory_breakdown_bytes"], more = memory_breakdown(raw, has_memory_stats)
    unmeasured.update(more)
    achieved_tflops = ctx.flops_per_sample * batch_size / median / 1e12 if ctx.flops_per_sample else None
    row["achieved_tflops"] = achieved_tflops
    if achieved_tflops is None:
        unmeasured["achieved_tflops"] = Reason("no_flops")
    if achieved_tflops is not None and ctx.peak_tflops:
        row["mfu"], row["mfu_peak_key"] = achieved_tflops / ctx.peak_tflops, ctx.peak_key
    else:
        row["mfu"], row["mfu_peak_key"] = None, None
        unmeasured["mfu"] = ctx.mfu_unmeasured_reason or Reason("no_peak")
    row["gpu_util_pct"] = raw.telemetry.gpu_util_pct
    row["power_w"] = raw.telemetry.power_w
    energy = raw.telemetry.energy_j
    row["energy_j_per_step"] = energy / steps if energy is not None and steps else None
    for key in ("gpu_util_pct", "power_w", "device_used_bytes", "energy_j_per_step"):
        if row[key] is None:
            unmeasured[key] = raw.telemetry.unmeasured.get(key) or Reason("not_measured")
    row["loss_finite"] = raw.loss_finite
    if raw.scale_start is not None and raw.scale_end is not None and raw.scale_end > 0:
        # Each skipped step halves the scale; growth needs 2000 clean steps, so within a short window
        # log2(start/end) counts the skips.
        row["grad_scaler_skips"] = float(max(0.0, round(math.log2(raw.scale_start / raw.scale_end), 3)))
    else:
        row["grad_scaler_skips"] = None
        unmeasured["grad_scaler_skips"] = Reason("no_grad_scaler")
    notes = [n for n in [note, *raw.telemetry.notes] if n]
    row.pop("reason_keys", None)
    row.update(reason_fields(*notes))
    row.update(unmeasured_fields(unmeasured))
    return row
