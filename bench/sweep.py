"""The `bench run` sweep: set up device, model and file; measure each (precision, batch); max batch; data loader."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

import torch

from bench import cli_run, detect, harness, maxbatch, zoo
from bench.cli_progress import Progress, summary_table
from bench.precision import plan_for, set_fp32_mode
from bench.runinfo import command_line, requested
from bench.stats import noise_warning
from bench.telemetry import NullSampler, Sampler, device_handle, load_nvml
from planner.inputs.errors import InputError
from planner.inputs.reasons import reason_fields
from planner.inputs.resultfile import SCHEMA, replace_result_atomic, result_path, write_result_atomic
from planner.vocab import Reason

MEMORY_METHOD = (
    "weights/grads/optimizer: tensor sizes; activations: allocated after forward minus before (phase pass); "
    "transients: peak_allocated - static - max(activations, grads), static = allocated after a full step"
)
LR = {"sgd": 1e-3, "sgd_momentum": 1e-3}
CPU_AUTO_BATCHES = (8, 16, 32)
# The safe batch's repeat run: a few more steps than a search trial (warm-up 2, 2 steps), since fragmentation
# grows as steps go by.
SAFE_CONFIRM = harness.HarnessConfig(warmup=2, steps=5, phase_steps=0)
IN_PROGRESS = Reason("in_progress")


def optimizer_factory(name: str, impl: str, lr: float | None, device: torch.device):
    """A callable params -> optimizer; checked once on a tiny parameter so a bad choice is an input error."""
    lr = lr if lr is not None else LR.get(name, 1e-4)
    kw = {"fused": True} if impl == "fused" else {"foreach": True}
    if name == "adam8bit":
        try:
            import bitsandbytes as bnb
        except ImportError:
            raise InputError("--optimizer", None, name, "an optimizer whose package is installed (adam8bit needs "
                             "bitsandbytes)") from None

        def make(params):
            return bnb.optim.Adam8bit(params, lr=lr)
    elif name == "adafactor":
        if not hasattr(torch.optim, "Adafactor"):
            raise InputError("--optimizer", None, name, f"an optimizer torch {torch.__version__} has (>= 2.5)")

        def make(params):
            return torch.optim.Adafactor(params, lr=lr, foreach=True)
    else:
        cls = {"sgd": torch.optim.SGD, "sgd_momentum": torch.optim.SGD, "adam": torch.optim.Adam,
               "adamw": torch.optim.AdamW}[name]
        extra = {"momentum": 0.9} if name == "sgd_momentum" else {"weight_decay": 0.01} if name == "adamw" else {}

        def make(params):
            return cls(params, lr=lr, **extra, **kw)
    try:
        probe = torch.zeros(4, device=device, requires_grad=True)
        probe.grad = torch.zeros_like(probe)
        make([probe]).step()
    except Exception as exc:  # noqa: BLE001
        raise InputError("--optimizer-impl", None, f"{name} {impl}",
                         f"an optimizer implementation that runs on {device.type} ({exc})") from None
    return make, lr


def describe_batch(batch) -> str:
    parts = []
    for t in batch if isinstance(batch, tuple | list) else (batch,):
        if isinstance(t, torch.Tensor):
            parts.append(f"{'x'.join(map(str, t.shape[1:])) or 'scalar'} {str(t.dtype).replace('torch.', '')}")
    return ", ".join(parts) or "custom batch"


class Sweep:
    def __init__(self, args, cfg: dict):
        self.args, self.cfg = args, cfg
        self.progress = Progress(quiet=args.quiet, events=getattr(args, "events", None))
        self.path: Path | None = None
        self.data: dict[str, Any] | None = None  # the result document; prepare() makes it
        # The requested points per precision (None: --batch auto has not chosen them yet), and why the run
        # stopped early (None while it runs): together they give a partial file's `missing` list.
        batches = cfg["batches"]
        self.planned: dict[str, list[int] | None] = {
            p: (None if batches == "auto" else list(batches)) for p in cfg["precisions"]}
        self.stop_reason: Reason | None = None

    @property
    def doc(self) -> dict[str, Any]:
        """The result document, for the steps after prepare() (calling them before it is a bug here)."""
        if self.data is None:
            raise RuntimeError("Sweep.prepare() must run first")
        return self.data

    # -------------------------------------------------------------- setup
    def prepare(self) -> None:
        args = self.args
        torch.manual_seed(args.seed)
        facts = detect.gather(profiles_dirs=args.profiles, cpu_only=args.cpu_only)
        self.facts = facts
        self.profile = None
        if facts["device"] == "cuda":
            if not 0 <= args.gpu_index < len(facts["gpus"]):
                raise InputError("--gpu-index", None, args.gpu_index, f"0..{len(facts['gpus']) - 1}")
            self.device: harness.Device = harness.CudaDevice(args.gpu_index)
            gpu = facts["gpus"][args.gpu_index]
            self.profile = facts["_profiles"].get(gpu["profile_id"]) if gpu["profile_id"] else None
            device_dir = gpu["device_dir"]
            if self.profile is None:
                name = (gpu.get("nvml") or {}).get("name") or gpu["name"]
                self.progress.warn(f"GPU {name!r} matches no GPU profile; measuring it anyway. To plan with it, "
                                   + detect.ADD_PROFILE_HINT.format(name=name, label=device_dir))
        else:
            self.device = harness.CpuDevice()
            device_dir = "cpu"
            why = "--cpu-only" if args.cpu_only else detect.cpu_reason(facts)
            if self.cfg["root"] is None:
                self.cfg["root"] = cli_run.default_root(cpu=True)
            self.progress.notice(f"No GPU used ({why}): measuring on the CPU; results go to {self.cfg['root']}/cpu/. "
                                 "Memory, power and MFU fields will be null with a reason.")
        if self.cfg["root"] is None:
            self.cfg["root"] = cli_run.default_root(cpu=False)
        torch.backends.cudnn.benchmark = bool(args.cudnn_benchmark)
        self.workload, model_block = self._load_model()
        self.make_optimizer, lr = optimizer_factory(args.optimizer, args.optimizer_impl, args.lr,
                                                    self.device.torch_device)
        self.snapshot = {k: v.detach().to("cpu", copy=True) for k, v in self.workload.model.state_dict().items()}
        self.plans = {p: plan_for(p, self.device.kind) for p in self.cfg["precisions"]}
        flags = {p: set_fp32_mode(plan.fp32_mode) for p, plan in self.plans.items()}
        self.sampler = self._sampler()
        created = _utc_now()
        self.data = {
            "schema": SCHEMA, "created_utc": created, "partial": True,
            "environment": detect.environment_block(facts, flags, bool(args.cudnn_benchmark), args.gpu_index),
            "model": model_block,
            "settings": self._settings(lr, model_block),
            "missing": [], "warnings": [], "warning_keys": [], "measurements": [], "max_batch": [],
            "dataloader": [],
        }
        self.data["missing"] = self.missing()
        target = result_path(self.cfg["root"], device_dir, model_block["name"], created)
        try:
            self.path = write_result_atomic(self.data, target)
        except OSError as exc:
            raise InputError("--out", None, str(target.parent), f"a writable folder ({exc})") from None
        self.progress.notice(f"writing {self.path}")

    def _load_model(self):
        spec, options, dev = self.args.model, self.cfg["options"], self.device.torch_device
        entry = None
        if ":" in spec:
            try:
                workload = zoo.load_custom(spec)
            except Exception as exc:  # noqa: BLE001 - any failure to import or call the user's code
                raise InputError("--model", None, spec, "an importable 'package.module:callable' that returns a "
                                 f"Workload (README: Custom models); it failed with {exc.__class__.__name__}: "
                                 f"{exc}") from None
            workload.model.to(dev)
        else:
            try:
                workload = zoo.build(spec, device=dev, **options)
                entry = zoo.describe(spec, **options)
            except zoo.UnknownModelError:
                raise InputError("--model", None, spec, "a zoo id (" + ", ".join(zoo.list_models())
                                 + ") or 'package.module:callable'") from None
            except (TypeError, ValueError) as exc:
                raise InputError("--model-option", None, options, str(exc)) from None
        params = sum(p.numel() for p in workload.model.parameters())
        trainable = sum(p.numel() for p in workload.model.parameters() if p.requires_grad)
        block = {"name": spec, "family": "custom", "params": params, "trainable_params": trainable,
                 "input_desc": None, "flops_per_sample": None, "flop_convention": None, "options": options}
        if entry is not None:  # entry.id: the current zoo id, also when an old one ('llama') was typed
            block.update(name=entry.id, family=entry.family, input_desc=entry.input_desc,
                         flops_per_sample=entry.flops_per_sample,
                         flop_convention=entry.flop_convention)
        else:
            block["input_desc"] = describe_batch(workload.make_batch(2, dev))
            try:
                block["flops_per_sample"] = zoo.count_flops_per_sample(workload, 2)
                block["flop_convention"] = zoo.COUNTER_CONVENTION
            except Exception as exc:  # noqa: BLE001
                block["flop_convention"] = f"unknown: FlopCounterMode failed ({exc.__class__.__name__}: {exc})"
            workload.model.zero_grad(set_to_none=True)
        return workload, block

    def _settings(self, lr: float, model_block: dict) -> dict:
        a = self.args
        params = model_block["params"] or 0
        return {
            "warmup": a.warmup, "steps": a.steps, "phase_steps": a.phase_steps, "optimizer": a.optimizer,
            "optimizer_impl": a.optimizer_impl, "lr": lr, "set_to_none": True, "grad_accum": 1,
            "activation_checkpointing": False,
            "frozen_fraction": 1 - model_block["trainable_params"] / params if params else 0.0,
            "adapter": None, "sharding": "none", "state_layout": "torch_amp",
            "sync_method": self.device.sync_method, "seed": a.seed, "weights_reset_between_configs": True,
            "memory_breakdown": MEMORY_METHOD, "command": command_line(a),
            "requested": {**requested(self.cfg["precisions"], self.cfg["batches"], a.steps, a.warmup),
                          "max_batch": bool(a.max_batch), "dataloader": bool(a.dataloader)},
        }

    def _sampler(self):
        if self.device.kind != "cuda":
            return NullSampler(Reason("no_gpu_nvml"))
        nvml, reason = load_nvml()
        if nvml is None:
            return NullSampler(reason)
        gpu = self.facts["gpus"][self.args.gpu_index]
        try:
            return Sampler(nvml, device_handle(nvml, gpu.get("uuid"), gpu["index"]))
        except Exception as exc:  # noqa: BLE001
            return NullSampler(Reason("nvml_no_handle", gpu=gpu["index"], error=str(exc)))

    # -------------------------------------------------------------- measuring
    def _context(self, precision: str) -> harness.RecordContext:
        peak, why = None, None
        if self.device.kind != "cuda":
            why = Reason("no_profile_cpu")
        elif self.profile is None:
            why = Reason("no_profile_gpu")
        else:
            peak = self.profile.peak_tflops_for(precision)
            if peak is None:
                why = Reason("no_precision_peak", profile=self.profile.id, precision=precision)
        return harness.RecordContext(self.doc["model"]["flops_per_sample"], peak, precision if peak else None,
                                     why, self.device.kind)

    def _reset_weights(self) -> None:
        model = self.workload.model
        model.zero_grad(set_to_none=True)
        model.load_state_dict(self.snapshot)

    def _run(self, precision: str, batch: int, config: harness.HarnessConfig, sampler):
        self._reset_weights()
        return harness.run_config(self.workload, self.plans[precision], batch, self.make_optimizer, config,
                                  self.device, sampler=sampler)

    def measure(self, precision: str, batch: int) -> dict:
        a = self.args
        config = harness.HarnessConfig(warmup=a.warmup, steps=a.steps, phase_steps=a.phase_steps)
        status, reason, raw = self._run(precision, batch, config, self.sampler)
        row = harness.to_record(precision, batch, status, reason, raw, self._context(precision), a.steps,
                                self.device.has_memory_stats, note=self.plans[precision].note)
        self.doc["measurements"].append(row)
        if row.get("noisy"):
            warning = noise_warning(row["step_time_s"], precision=precision, batch=batch)
            self.doc["warnings"].append(str(warning))
            self.doc["warning_keys"].append([warning.as_json()])
            self.progress.warn(str(warning))
        self.save(partial=True)
        median = row["step_time_s"]["median"] if row.get("step_time_s") else None
        if status in ("oom", "error"):
            self.progress.notice(f"{precision} batch {batch}: {status} ({reason}); continuing")
        self.progress.step(precision, batch, status, median)
        return row

    def max_batch(self, precision: str) -> dict:
        entry: dict[str, Any] = {"precision": precision, "max_batch": None, "safe_batch": None,
                                 "safe_confirmed": False, "trials": []}
        plan = self.plans[precision]
        if self.device.kind != "cuda":
            entry.update(reason_fields(Reason("cpu_no_memory_limit")))
        elif plan.skip_reason:
            entry.update(reason_fields(plan.skip_reason))
        else:
            known = []
            for m in self.doc["measurements"]:
                if m["precision"] == precision and m["status"] == "ok" and m.get("peak_reserved_bytes"):
                    known.append(maxbatch.Trial(m["batch_size"], "ok", m["peak_reserved_bytes"]))
                elif m["precision"] == precision and m["status"] == "oom":
                    known.append(maxbatch.Trial(m["batch_size"], "oom"))
            trial_cfg = harness.HarnessConfig(warmup=2, steps=2, phase_steps=0)
            null = NullSampler(Reason("not_measured"))  # a trial's telemetry is not kept

            def trial(b: int, config: harness.HarnessConfig = trial_cfg, what: str = "trial") -> maxbatch.Trial:
                status, _reason, raw = self._run(precision, b, config, null)
                self.progress.emit("max_batch", precision=precision, batch=b, status=status, stage=what)
                self.progress.notice(f"max batch {precision}: {what} {b}: {status}")
                return maxbatch.Trial(b, status, raw.peak_reserved_bytes if raw else None)

            harness.release(self.workload.model, self.device)
            capacity = self.device.capacity_bytes()
            if capacity is None:  # only a CPU device has no limit, and the first branch took it
                raise RuntimeError(f"the {self.device.kind} device reports no memory capacity to search")
            result = maxbatch.find_max_batch(trial, capacity, known=known, max_trials=self.args.max_batch_trials)
            entry.update(max_batch=result.max_batch, trials=result.trials_json(), converged=result.converged,
                         **reason_fields(result.reason), capacity_bytes=capacity, known_sizes=[t.batch_size for t in known])
            if result.fit:
                entry["fit"] = {"intercept_bytes": result.fit[0], "bytes_per_sample": result.fit[1]}
            safe = maxbatch.confirm_safe_batch(lambda b: trial(b, SAFE_CONFIRM, "safe-batch repeat run"),
                                               result.max_batch)
            entry.update(safe_batch=safe.batch_size, safe_confirmed=safe.confirmed, safe_trials=safe.trials_json(),
                         **reason_fields(safe.reason, name="safe_reason"),
                         safe_method=(f"{maxbatch.SAFE_FRACTION:.0%} of max_batch, rounded down to a multiple of "
                                      f"{maxbatch.SAFE_MULTIPLE} when >= {maxbatch.SAFE_MULTIPLE}, confirmed by a "
                                      f"repeat run ({SAFE_CONFIRM.warmup} warm-up + {SAFE_CONFIRM.steps} steps); "
                                      "stepped down by the same margin after an OOM"))
        self.doc["max_batch"].append(entry)
        self.save(partial=True)
        return entry

    def run(self) -> None:
        precisions, batches = self.cfg["precisions"], self.cfg["batches"]
        plan_sizes: dict[str, list[int]] = {}
        self.progress.emit("start", path=str(self.path), device=self.device.kind, model=self.args.model,
                           precisions=precisions, batches=batches)
        if batches == "auto":
            if self.device.kind != "cuda":
                self.progress.notice("--batch auto needs a GPU's memory limit; on CPU measuring "
                                     + ",".join(map(str, CPU_AUTO_BATCHES)))
                plan_sizes = {p: list(CPU_AUTO_BATCHES) for p in precisions}
                self.planned.update(plan_sizes)
            else:
                for p in precisions:
                    entry = self.max_batch(p)
                    safe = entry.get("safe_batch")  # the sweep stays a margin below the largest that ran
                    plan_sizes[p] = self.planned[p] = maxbatch.auto_batches(safe) if safe else []
                    if not safe:
                        why = str(Reason("no_batch_fits")) if not entry.get("max_batch") else entry.get("safe_reason")
                        self.progress.warn(f"--batch auto: no safe batch size at {p} ({why}); nothing to sweep "
                                           "there")
                    self.save(partial=True)
        else:
            plan_sizes = {p: list(batches) for p in precisions}
        self.progress.total = sum(len(v) for v in plan_sizes.values())
        for p in precisions:
            for b in plan_sizes[p]:
                self.measure(p, b)
        if self.args.max_batch and batches != "auto":
            for p in precisions:
                self.max_batch(p)
        if self.args.dataloader:
            self._dataloader()

    def _dataloader(self) -> None:
        from bench import dataloader_bench

        a = self.args
        self.progress.notice("measuring the input pipeline (--dataloader)")

        def on_row(row: dict) -> None:
            self.doc["dataloader"].append(row)
            self.save(partial=True)
            rate = row["samples_per_s"]
            self.progress.notice(f"  workers {row['num_workers']}, pin_memory {row['pin_memory']}: "
                                 + (f"{rate:.0f} samples/s" if rate is not None else row.get("reason", "-")))

        dataloader_bench.run(self.device.torch_device, batch_size=a.dataloader_batch,
                             batches=a.dataloader_batches, cpu_cost_ms=a.cpu_cost_ms, image_folder=a.image_folder,
                             workers=self.cfg["workers"], on_row=on_row)

    # -------------------------------------------------------------- output
    def ok_count(self) -> int:
        return sum(1 for m in (self.data or {}).get("measurements", []) if m["status"] == "ok")

    def missing(self) -> list[dict]:
        """The requested points with no row yet, each with why (`missing` of a partial file)."""
        why = self.stop_reason or IN_PROGRESS
        done = {(m["precision"], m["batch_size"]) for m in self.doc["measurements"]}
        out: list[dict] = []
        for precision, sizes in self.planned.items():
            if sizes is None:
                out.append({"precision": precision, "batch_size": None,
                            **reason_fields(Reason("batch_not_chosen"), why)})
                continue
            out.extend({"precision": precision, "batch_size": b, **reason_fields(why)}
                       for b in sizes if (precision, b) not in done)
        return out

    def save(self, partial: bool) -> None:
        if self.path is None or self.data is None:
            return
        self.data["missing"] = self.missing() if partial else []
        self.data["partial"] = partial
        replace_result_atomic(self.data, self.path)

    def finish(self) -> None:
        self.progress.close()
        table = summary_table(self.doc["measurements"], self.doc["max_batch"])
        if not self.args.quiet:
            stream = sys.stderr if self.progress.events is not None else sys.stdout
            print(table, file=stream)
        self.progress.warn(f"results: {self.path}")
        self.progress.emit("done", path=str(self.path), partial=False, measurements=len(self.doc["measurements"]))


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
