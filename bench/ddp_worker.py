"""One torchrun worker of `bench ddp`: time single-process, DDP and no_sync steps, then all-reduce bus bandwidth."""

# Method (every rank runs this program; global rank 0 writes the report):
# 1. step_time_1_s: rank 0 alone trains the plain model (no DDP, no collective) while the other ranks wait on a
#    gloo control group; median over `steps` steps after `warmup`.
# 2. step_time_n_s: the DDP-wrapped model on every rank; per step the slowest rank, then the median over steps.
# 3. step_time_nosync_s: the same DDP steps inside `DDP.no_sync()` (no gradient all-reduce) on the same ranks;
#    exposed_comm_s = step_time_n_s - step_time_nosync_s, clamped at 0: the communication backward does not hide.
# 4. efficiency = step_time_1_s / step_time_n_s for the same per-process batch.
# 5. busbw: all_reduce of an fp32 buffer per message size, time per call = slowest rank, busbw = S/t x 2(n-1)/n
#    (nccl-tests PERFORMANCE.md).

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import socket
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

from bench import ddp as launcher
from bench import detect, harness, zoo
from bench.precision import plan_for, set_fp32_mode
from bench.stats import step_time_block, summarize
from bench.testing import inject_fault
from planner.inputs.atomic import atomic_write
from planner.inputs.reasons import reason_fields, unmeasured_fields
from planner.vocab import Reason

EXPOSED_METHOD = ("step time with DDP minus step time under DDP.no_sync() on the same ranks (per step the "
                  "slowest rank, median over steps), clamped at 0")
BUSBW_METHOD = ("torch.distributed.all_reduce (sum) of an fp32 buffer per size: warm-up, then as many calls as "
                "fit the time budget; time per call = slowest rank; busbw = bytes / time x 2(n-1)/n (nccl-tests)")


class Context:
    """Ranks, device and the two process groups (the backend under test, and gloo for control messages)."""

    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.rank = int(os.environ["RANK"])
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.local_world = int(os.environ.get("LOCAL_WORLD_SIZE", self.world))
        self.on_gpu = cfg["backend"] == "nccl"
        self.device = harness.CudaDevice(self.local_rank) if self.on_gpu else harness.CpuDevice()
        pg = dt.timedelta(seconds=cfg["pg_timeout_s"])
        kwargs = {"backend": cfg["backend"], "timeout": pg}
        if self.on_gpu:
            kwargs["device_id"] = self.device.torch_device  # binds the communicator to this GPU (eager NCCL init)
        dist.init_process_group(**kwargs)
        # Waiting while rank 0 measures alone may take long; this group's timeout is the whole run's.
        self.control = dist.new_group(backend="gloo", timeout=dt.timedelta(seconds=cfg["wait_timeout_s"]))

    def gather(self, obj) -> list:
        out = [None] * self.world
        dist.all_gather_object(out, obj, group=self.control)
        return out

    def say(self, text: str) -> None:
        if self.rank == 0:
            print(f"bench ddp: {text}", flush=True)


def timed_steps(step, n: int, device, wrap=contextlib.nullcontext, on_step=None) -> list[float]:
    """Per-step seconds of `n` calls of step() (host clock on CPU, CUDA events on GPU; one sync at the end)."""
    timer = device.step_timer(n)
    for i in range(n):
        if on_step is not None:
            on_step(i)
        timer.start(i)
        with wrap():
            step()
        timer.stop(i)
    device.synchronize()
    return timer.elapsed_s()


def slowest_per_step(per_rank: list[list[float]]) -> list[float]:
    """Steps are lock-stepped by the all-reduce, so a step lasts as long as its slowest rank."""
    return [max(ts) for ts in zip(*per_rank, strict=True)]


def busbw_sweep(ctx: Context, sizes: list[int], budget_s: float, max_iters: int = 100) -> list[dict]:
    dev, clock = ctx.device, ctx.device.clock
    rows = []
    for nbytes in sizes:
        buf = torch.zeros(nbytes // 4, dtype=torch.float32, device=dev.torch_device)  # zeros: sums never overflow
        for _ in range(2):
            dist.all_reduce(buf)
        dev.synchronize()
        t0 = clock()
        dist.all_reduce(buf)
        dev.synchronize()
        probe = max(ctx.gather(clock() - t0))  # every rank must run the same number of calls
        iters = max(1, min(max_iters, int(budget_s / max(probe, 1e-9))))
        dist.barrier(group=ctx.control)
        dev.synchronize()
        t0 = clock()
        for _ in range(iters):
            dist.all_reduce(buf)
        dev.synchronize()
        per_call = max(ctx.gather((clock() - t0) / iters))
        algbw, busbw = launcher.bus_bandwidth_gb_s(nbytes, per_call, ctx.world)
        row = {"bytes": nbytes, "gb_per_s": busbw, "algbw_gb_per_s": algbw, "time_s": per_call, "iters": iters}
        if busbw is None:
            row.update(reason_fields(Reason("ddp_one_rank")))
        rows.append(row)
        del buf
    return rows


def _environment(ctx: Context, flags: dict) -> tuple[dict, str, list[str]]:
    facts = detect.gather(profiles_dirs=ctx.cfg["profiles"], cpu_only=not ctx.on_gpu)
    gpu_index = ctx.local_rank if facts["device"] == "cuda" else 0
    env = detect.environment_block(facts, flags, False, gpu_index)
    device_dir = facts["gpus"][gpu_index]["device_dir"] if facts["device"] == "cuda" else "cpu"
    return env, device_dir, facts.get("profile_problems") or []


def _model_block(cfg: dict, model) -> dict:
    entry = zoo.describe(cfg["model"], **cfg["options"])
    params = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return {"name": cfg["model"], "family": entry.family, "params": params, "trainable_params": trainable,
            "input_desc": entry.input_desc, "flops_per_sample": entry.flops_per_sample,
            "flop_convention": entry.flop_convention, "options": cfg["options"]}


def _measurement_row(ctx: Context, stats: dict, noisy: bool, peaks: tuple, finite: bool) -> dict:
    cfg, on_gpu = ctx.cfg, ctx.on_gpu
    cpu_mem = harness.CPU_MEMORY_REASON
    nodes = ctx.world // ctx.local_world
    no_memory, no_nvml, no_throughput = Reason("ddp_no_memory"), Reason("ddp_no_nvml"), Reason("ddp_no_throughput")
    unmeasured = {
        "static_bytes": no_memory, "first_step_peak_bytes": no_memory, "device_used_bytes": no_nvml,
        "achieved_tflops": no_throughput, "mfu": no_throughput, "gpu_util_pct": no_nvml, "power_w": no_nvml,
        "energy_j_per_step": no_nvml, "grad_scaler_skips": Reason("ddp_no_scaler"),
    }
    if not on_gpu:
        unmeasured.update(peak_allocated_bytes=cpu_mem, peak_reserved_bytes=cpu_mem)
    return {
        "source": "measured", "precision": cfg["precision"], "batch_size": cfg["batch"], "status": "ok",
        **reason_fields(Reason("ddp_step", processes=ctx.world, nodes=nodes, per_node=ctx.local_world,
                               backend=cfg["backend"], steps=cfg["steps"])),
        "step_time_s": stats, "noisy": noisy, "phases_s": {}, "samples_per_s": cfg["batch"] / stats["median"],
        "peak_allocated_bytes": peaks[0], "peak_reserved_bytes": peaks[1], "static_bytes": None,
        "first_step_peak_bytes": None, "device_used_bytes": None, "memory_breakdown_bytes": {},
        "achieved_tflops": None, "mfu": None, "mfu_peak_key": None, "gpu_util_pct": None, "power_w": None,
        "energy_j_per_step": None, "loss_finite": finite, "grad_scaler_skips": None, **unmeasured_fields(unmeasured),
        "provenance": dict(harness.MEASURED_PROVENANCE),
    }


def _check_same_config(ctx: Context) -> None:
    """Every node must run the same command: compare a digest of the options that shape the measurement."""
    shaped = {k: v for k, v in ctx.cfg.items() if k not in ("run_dir", "profiles", "fault_inject")}
    digest = hashlib.sha256(json.dumps(shaped, sort_keys=True).encode()).hexdigest()[:12]
    digests = ctx.gather(digest)
    if len(set(digests)) > 1:
        raise RuntimeError("nodes were started with different bench ddp options (per-rank digests "
                           f"{digests}); run the same command on every node")


def _write_json(path: Path, data: dict) -> None:
    """The one atomic writer (a unique temp name, fsync, rename): the launcher never reads half a report."""
    atomic_write(path, json.dumps(data, indent=1, allow_nan=False))


def run(cfg: dict) -> None:
    run_dir = Path(cfg["run_dir"])
    (run_dir / "pids" / f"{os.environ.get('LOCAL_RANK', '0')}.pid").write_text(str(os.getpid()))
    ctx = Context(cfg)
    _check_same_config(ctx)
    hosts = ctx.gather({"host": socket.gethostname(),
                        "device": torch.cuda.get_device_name(ctx.device.torch_device) if ctx.on_gpu else "cpu"})
    torch.manual_seed(cfg["seed"])
    dev = ctx.device
    workload = zoo.build(cfg["model"], device=dev.torch_device, **cfg["options"])
    plan = plan_for(cfg["precision"], dev.kind)
    flags = set_fp32_mode(plan.fp32_mode)
    from bench.sweep import optimizer_factory  # after init: its probe step touches the device

    make_optimizer, lr = optimizer_factory(cfg["optimizer"], cfg["optimizer_impl"], cfg["lr"], dev.torch_device)
    config = harness.HarnessConfig(warmup=cfg["warmup"], steps=cfg["steps"], phase_steps=0)

    t1_stats: dict | None = None
    if ctx.rank == 0:
        ctx.say(f"1 process, no DDP: {cfg['warmup']} + {cfg['steps']} steps (the other ranks wait)")
        raw = harness.measure(workload, plan, cfg["batch"], make_optimizer, config, dev)
        t1_stats = summarize(raw.step_times_s)
        workload.model.zero_grad(set_to_none=True)
        dev.empty_cache()
    dist.barrier(group=ctx.control)

    # DDP broadcasts rank 0's parameters, so every rank starts from the same weights.
    ddp = DDP(workload.model, device_ids=[ctx.local_rank] if ctx.on_gpu else None, bucket_cap_mb=cfg["bucket_cap_mb"])
    wrapped = zoo.Workload(ddp, workload.make_batch, workload.loss_fn)
    batch = workload.make_batch(cfg["batch"], dev.torch_device)
    optimizer = make_optimizer([p for p in ddp.parameters() if p.requires_grad])
    scaler = plan.make_scaler()
    finite = torch.ones((), dtype=torch.bool, device=dev.torch_device)
    step = harness.make_step(wrapped, plan, optimizer, scaler, batch, finite)

    ctx.say(f"{ctx.world} processes, DDP: {cfg['warmup']} + {cfg['steps']} steps, then the same under no_sync()")
    for _ in range(cfg["warmup"]):
        step()
    dev.synchronize()
    dev.reset_peak()
    fault, hang_s = cfg.get("fault_inject"), 10 * cfg["wait_timeout_s"]
    ddp_times = timed_steps(step, cfg["steps"], dev, on_step=lambda i: inject_fault(fault, ctx.rank, i, hang_s))
    peaks = (dev.max_allocated(), dev.max_reserved())
    with ddp.no_sync():
        step()  # one untimed no_sync step: the reducer switches mode
    nosync_times = timed_steps(step, cfg["steps"], dev, wrap=ddp.no_sync)
    step_n, noisy = step_time_block(slowest_per_step(ctx.gather(ddp_times)))  # the file's measurement row
    step_nosync = summarize(slowest_per_step(ctx.gather(nosync_times)))
    all_finite = all(ctx.gather(bool(finite.item())))

    grad_bytes = sum(p.numel() * p.element_size() for p in ddp.parameters() if p.requires_grad)
    bucket_bytes = int(cfg["bucket_cap_mb"] * 2**20)
    sizes = launcher.message_sizes(cfg["busbw_sizes"], grad_bytes, bucket_bytes)
    ctx.say(f"all-reduce bus bandwidth at {len(sizes)} sizes, {sizes[0]:,} to {sizes[-1]:,} bytes")
    del optimizer, ddp, wrapped, step, batch
    dev.empty_cache()
    busbw = busbw_sweep(ctx, sizes, cfg["busbw_budget_s"])

    if ctx.rank == 0:
        if t1_stats is None:  # rank 0 measured it before DDP started
            raise RuntimeError("rank 0 has no single-process step time")
        env, device_dir, problems = _environment(ctx, flags)
        devices = sorted({h["device"] for h in hosts})
        profile_id = env.get("gpu_profile_id") if len(devices) == 1 else None
        t_1, t_n = t1_stats["median"], step_n["median"]
        section = {
            "backend": cfg["backend"], "nnodes": ctx.world // ctx.local_world, "nproc_per_node": ctx.local_world,
            "gpu_profile_id": profile_id, "world_size": ctx.world, "device": dev.kind, "devices": devices,
            "hosts": sorted({h["host"] for h in hosts}), "precision": cfg["precision"],
            "batch_per_process": cfg["batch"], "step_time_1_s": t_1, "step_time_n_s": t_n,
            "step_time_nosync_s": step_nosync["median"], "efficiency": t_1 / t_n,
            "exposed_comm_s": max(0.0, t_n - step_nosync["median"]), "exposed_comm_method": EXPOSED_METHOD,
            "step_time_1_stats_s": t1_stats, "step_time_nosync_stats_s": step_nosync, "grad_bytes": grad_bytes,
            "bucket_cap_bytes": bucket_bytes, "busbw": busbw, "busbw_method": BUSBW_METHOD,
            "profile_problems": problems,
        }
        if len(devices) > 1:
            section.update(reason_fields(Reason("ddp_mixed_devices", devices=str(devices))))
        settings = {
            "warmup": cfg["warmup"], "steps": cfg["steps"], "optimizer": cfg["optimizer"],
            "optimizer_impl": cfg["optimizer_impl"], "lr": lr, "set_to_none": True, "grad_accum": 1,
            "activation_checkpointing": False, "frozen_fraction": 0.0, "adapter": None, "sharding": "none",
            "state_layout": "torch_amp", "sync_method": "ddp", "timing": dev.sync_method, "seed": cfg["seed"],
            "ddp": {"bucket_cap_mb": cfg["bucket_cap_mb"], "find_unused_parameters": False,
                    "broadcast_buffers": True, "gradient_as_bucket_view": False},
            "launcher": "torchrun (torch.distributed.run), c10d rendezvous", "pg_timeout_s": cfg["pg_timeout_s"],
        }
        model_block = _model_block(cfg, workload.model)
        params = model_block["params"] or 0
        settings["frozen_fraction"] = 1 - model_block["trainable_params"] / params if params else 0.0
        report = {"environment": env, "model": model_block, "settings": settings, "device_dir": device_dir,
                  "measurement": _measurement_row(ctx, step_n, noisy, peaks if ctx.on_gpu else (None, None),
                                                  all_finite),
                  "ddp": section}
        _write_json(run_dir / "report.json", report)
    elif ctx.local_rank == 0:
        _write_json(run_dir / "node.json", {"rank0_host": hosts[0]["host"]})
    dist.barrier(group=ctx.control)
    dist.destroy_process_group()


@record
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ddp_worker", description=__doc__)
    parser.add_argument("--config", required=True, help="JSON written by python -m bench ddp")
    args = parser.parse_args(argv)
    run(json.loads(Path(args.config).read_text(encoding="utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
