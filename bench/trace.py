"""`python -m bench trace`: predict a training step's CUDA memory on CPU fake tensors, and write a traced result file."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import socket
import subprocess
import sys
import traceback
from pathlib import Path
from typing import TypedDict

from planner.inputs.errors import InputError
from planner.inputs.reasons import reason_fields, unmeasured_fields
from planner.inputs.resultfile import SCHEMA, parse_result, result_path, write_result_atomic
from planner.inputs.shipped import bench_out_dir
from planner.vocab import GIB, PRECISIONS, Reason

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = bench_out_dir()  # the checkout's results/, or $TRAINPLAN_HOME/results when installed
SOURCE = "bench trace"

CUDA_BEHAVIOURS = (
    "autocast follows CUDA's op lists (layer_norm, softmax, log_softmax, sum, pow, rsqrt, losses ... in fp32; "
    "matmul/conv/SDPA in 16-bit) and its per-forward cache of 16-bit weight copies",
    "scaled_dot_product_attention as CUDA's fused kernels: no s x s score matrix and no dropout mask; a float32 "
    "logsumexp (b*a*s*4 bytes) is kept; backward allocates FlashAttention-2's dq accumulator and softmax_d "
    "(16-bit, no mask, head dim <= 256) or the memory-efficient kernel's delta (fp32 or masked)",
    "dropout masks stored as 1-byte booleans (CUDA's fused dropout) instead of the input dtype",
    "optimizers run their CUDA default foreach path (or fused when asked): foreach AdamW adds a 4 B/param "
    "temporary at step()",
    "every allocation rounded up to the CUDA caching allocator's 512-byte blocks",
)
STILL_DIFFERS = (
    "workspaces are not traced (cuBLAS/cuBLASLt, cuDNN incl. cudnn.benchmark, NCCL) and neither are the CUDA "
    "context or allocator fragmentation: the planner adds those terms (docs/methods.md#memory)",
    "kernels' internal scratch memory is not traced (only tensors that reach Python's dispatcher)",
    "SDPA backend choice is fixed (flash for 16-bit without a mask, else memory-efficient); cuDNN attention, "
    "the math fallback and padding for odd head sizes are not modelled",
    "RNNs (nn.LSTM/GRU) run CPU's per-layer path, not cuDNN's fused kernels with their reserve space",
    "free times follow Python reference counting; the caching allocator's stream-ordered reuse and delayed "
    "frees across streams are not modelled",
    "GradScaler (fp16) and optimizer host syncs read placeholder values; the step is never skipped",
)


# --- CLI ---------------------------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True,
                        help="zoo model id (python -m bench list) or a custom workload 'package.module:callable'")
    parser.add_argument("--precision", default="fp32,bf16", help="comma list of fp32, tf32, fp16, bf16")
    parser.add_argument("--batch", default="1,8,32", help="comma list of micro-batch sizes")
    parser.add_argument("--optimizer", default="adamw", help="sgd | sgd_momentum | adam | adamw | adafactor")
    parser.add_argument("--optimizer-impl", default="foreach", choices=("foreach", "fused"))
    parser.add_argument("--checkpointing", action="store_true", help="activation checkpointing of each block")
    parser.add_argument("--attention", default="sdpa", choices=("sdpa", "eager"),
                        help="sdpa (default): scaled_dot_product_attention, traced as CUDA's fused kernels; eager: "
                             "explicit softmax(QK^T)V with its s x s scores (2021-era BERT, timm ViT)")
    parser.add_argument("--frozen-fraction", type=float, default=0.0, metavar="F",
                        help="freeze this fraction of the parameters (lowest layers first)")
    parser.add_argument("--adapter", default=None, metavar="lora:R[:DTYPE]",
                        help="LoRA on the attention projections; base weights frozen in DTYPE (default: the "
                             "precision's 16-bit type, fp32 for fp32/tf32)")
    parser.add_argument("--seq-len", type=int, default=None, help="sequence length (token models)")
    parser.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE",
                        help="zoo build option, repeatable (e.g. preset=7b, layers=4, dropout=0.0)")
    parser.add_argument("--emulate", default="cuda", choices=("cuda", "cpu"),
                        help="cuda (default): apply CUDA's memory behaviours; cpu: plain CPU semantics, for "
                             "checking the tracer against a real CPU run")
    parser.add_argument("--out", default=str(DEFAULT_OUT),
                        help="results root; the file goes to OUT/traced/<model>-<UTC>.json ('-': print the JSON)")


def _split(value: str, field: str, convert, allowed=None) -> list:
    items = [v.strip() for v in value.split(",") if v.strip()]
    try:
        out = [convert(v) for v in items]
    except ValueError:
        out = []
    if not out or (allowed and any(v not in allowed for v in out)):
        raise InputError(SOURCE, field, value, "a comma list of " + (", ".join(allowed) if allowed else
                                                                     "positive integers"))
    return out


def _positive_int(text: str) -> int:
    n = int(text)
    if n < 1:
        raise ValueError(text)
    return n


def _model_options(args) -> dict:
    options: dict = {}
    for item in args.model_option:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise InputError(SOURCE, "--model-option", item, "KEY=VALUE")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    if args.seq_len is not None:
        if args.seq_len < 1:
            raise InputError(SOURCE, "--seq-len", args.seq_len, "a positive integer")
        options["seq_len"] = args.seq_len
    return options


# --- building workloads ------------------------------------------------------------------------------------------
class ModelMeta(TypedDict):
    """What the result file's `model` block says about the traced model besides counts and FLOPs."""

    name: str
    family: str
    input_desc: str
    transformer: dict | None  # zoo transformers' shape (ZooEntry.transformer)


def _with_attention(module, attention: str, model: str):
    """Set every zoo Attention module to `attention`; eager on a model without one is a usage error."""
    from bench.models_transformer import Attention

    layers = [m for m in module.modules() if isinstance(m, Attention)]
    if attention != "sdpa" and not layers:
        raise InputError(SOURCE, "--attention", attention, f"sdpa: {model} has no zoo attention layer to make eager")
    for m in layers:
        m.impl = attention
    return module


def _workload_builder(model: str, options: dict, attention: str = "sdpa"):
    """(metadata dict, build() -> (module, make_batch, loss_fn)); zoo models are built on the meta device."""
    from bench import zoo

    if ":" in model:
        if options:
            raise InputError(SOURCE, "--model-option", options, "no options for a custom module:callable model")

        def build_custom():
            import torch

            try:
                with torch.device("meta"):  # parameters cost nothing when the callable uses the default device
                    wl = zoo.load_custom(model)
            except ValueError:
                raise
            except Exception:  # noqa: BLE001 - e.g. it loads a checkpoint: build it for real instead
                wl = zoo.load_custom(model)
            return _with_attention(wl.model, attention, model), wl.make_batch, wl.loss_fn

        try:
            build_custom()  # fail early on a bad spec
        except ValueError as exc:
            raise InputError(SOURCE, "--model", model, f"a loadable package.module:callable ({exc})") from None
        meta: ModelMeta = {"name": model, "family": "custom", "input_desc": f"custom workload {model}",
                           "transformer": None}
        return meta, build_custom
    try:
        entry = zoo.describe(model, **options)
    except zoo.UnknownModelError:
        raise InputError(SOURCE, "--model", model, "a zoo model id (" + ", ".join(zoo.list_models())
                         + ") or a custom workload package.module:callable") from None
    except (ValueError, TypeError) as exc:
        raise InputError(SOURCE, "--model-option/--seq-len", options, f"options {model} accepts ({exc})") from None

    def build_zoo():
        wl = zoo.build(model, device="meta", **options)
        return _with_attention(wl.model, attention, model), wl.make_batch, wl.loss_fn

    # entry.id: the zoo id an old name ('llama') means, so result files carry the current id
    meta = {"name": entry.id, "family": entry.family, "input_desc": entry.input_desc, "transformer": entry.transformer}
    return meta, build_zoo


def _measurement(precision: str, batch: int, trace=None, error: str | None = None) -> dict:
    no_device = Reason("no_gpu_kernels")
    m = {"source": "traced", "precision": precision, "batch_size": batch, "status": "ok" if trace else "error",
         **reason_fields(Reason("step_failed", error=error) if error else None), "step_time_s": None, "phases_s": {}, "samples_per_s": None,
         "peak_allocated_bytes": trace.peak_bytes if trace else None, "peak_reserved_bytes": None,
         "static_bytes": trace.static_bytes if trace else None, "first_step_peak_bytes": None,
         "device_used_bytes": None, "memory_breakdown_bytes": dict(trace.breakdown) if trace else {},
         "achieved_tflops": None, "mfu": None, "gpu_util_pct": None, "power_w": None, "energy_j_per_step": None,
         "loss_finite": None, "grad_scaler_skips": None}
    if trace and trace.aten_ops:
        m["aten_ops"] = dict(trace.aten_ops)
    if trace and trace.op_classes:
        m["op_classes"] = {k: dict(v) for k, v in trace.op_classes.items()}
    fake_values = Reason("fake_values")
    reasons = {
        "step_time_s": Reason("no_gpu_kernels_time"),
        "samples_per_s": no_device, "achieved_tflops": no_device, "mfu": no_device, "gpu_util_pct": no_device,
        "power_w": no_device, "energy_j_per_step": no_device,
        "peak_reserved_bytes": Reason("allocator_not_emulated"), "first_step_peak_bytes": Reason("steady_state"),
        "device_used_bytes": Reason("outside_trace"), "loss_finite": fake_values, "grad_scaler_skips": fake_values,
    }
    if not trace:
        reasons.update({k: Reason("trace_failed", error=str(error)) for k in ("peak_allocated_bytes", "static_bytes")})
    m.update(unmeasured_fields({k: v for k, v in reasons.items() if m.get(k) is None}))
    return m


def _environment() -> dict:
    import torch

    from bench.detect import software

    return {"device": "cpu", "hostname": socket.gethostname(), "gpu_name": None, "gpu_profile_id": None,
            "gpu_count": 0, "total_memory_bytes": None, "driver": None, "cuda": None, "torch": torch.__version__,
            "python": platform.python_version(), "cpu": platform.processor() or platform.machine(),
            "nvml_available": False, "fp32_precision": None, "cudnn_benchmark": None, "allocator_config": None,
            "power_limit_w": None, "clocks": None, "mig": None, **software(torch)}


def run_traces(args) -> tuple[dict | None, int]:
    """Trace every (precision, batch) of the arguments; returns (result document or None, exit code)."""
    import torch

    from bench.trace_core import StepPlan, UntraceableModelError, run_traced_step
    from bench.trace_model import make_optimizer_factory, make_preparer, parse_adapter

    precisions = _split(args.precision, "--precision", str, PRECISIONS)
    batches = _split(args.batch, "--batch", _positive_int)
    if not 0.0 <= args.frozen_fraction < 1.0:
        raise InputError(SOURCE, "--frozen-fraction", args.frozen_fraction, "a fraction in [0, 1)")
    adapter = parse_adapter(args.adapter) if args.adapter else None
    make_optimizer = make_optimizer_factory(args.optimizer, args.optimizer_impl)
    if args.emulate == "cpu" and args.out != "-" and _inside(Path(args.out), DEFAULT_OUT):
        raise InputError(SOURCE, "--out", args.out, "'-' or a folder outside results/ with --emulate cpu (CPU "
                         "semantics check the tracer; the planner must never read them as a CUDA prediction)")
    if adapter and args.frozen_fraction:
        raise InputError(SOURCE, "--frozen-fraction", args.frozen_fraction, "0 with --adapter (LoRA freezes the base)")
    meta, build = _workload_builder(args.model, _model_options(args), attention=args.attention)
    emulate_cuda = args.emulate == "cuda"
    dtypes = {"fp32": None, "tf32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
    measurements: list[dict] = []
    flops: float | None = None
    counts: tuple[int, int] | None = None
    notes: list[str] = []
    failed = 0
    for precision in precisions:
        prepare = make_preparer(frozen_fraction=args.frozen_fraction, adapter=adapter, precision=precision,
                                checkpointing=args.checkpointing)
        for batch in batches:
            plan = StepPlan(build=build, prepare=prepare, make_optimizer=make_optimizer, batch_size=batch,
                            autocast_dtype=dtypes[precision], grad_scaler=precision == "fp16",
                            emulate_cuda=emulate_cuda)
            try:
                traced = run_traced_step(plan)
            except (InputError, UntraceableModelError):
                raise
            except Exception as exc:  # noqa: BLE001 - one failed configuration must not hide the others
                failed += 1
                reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                print(f"{precision} batch {batch}: trace failed: {reason}", file=sys.stderr)
                measurements.append(_measurement(precision, batch, error=reason))
                continue
            measurements.append(_measurement(precision, batch, traced))
            notes.extend(n for n in traced.notes if n not in notes)
            if flops is None:
                flops, counts = traced.flops / batch, (traced.params, traced.trainable_params)
    if failed == len(measurements):
        return None, 1
    doc = _document(args, meta, measurements, flops, counts, notes, adapter)
    parse_result(doc, "traced result")  # the contract: never write a file the planner would reject
    return doc, 1 if failed else 0


def _inside(path: Path, root: Path) -> bool:
    path, root = path.resolve(), root.resolve()
    return path == root or root in path.parents


def _adapter_setting(adapter, precisions: list[str]) -> dict | None:
    if adapter is None:
        return None
    bases = {adapter.resolved_base_dtype(p) for p in precisions}
    setting = adapter.describe(precisions[0])
    if len(bases) > 1:
        setting["base_dtype"] = "per precision: fp32 for fp32/tf32 rows, else the row's 16-bit type"
    return setting


def _document(args, meta, measurements, flops, counts, notes, adapter) -> dict:
    import torch

    from bench.runinfo import command_line, requested
    from bench.trace_model import OPTIMIZER_OPTIONS

    created = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    emulates = args.emulate
    model = {"name": meta["name"], "family": meta["family"], "params": counts[0], "trainable_params": counts[1],
             "input_desc": meta["input_desc"], "flops_per_sample": flops,
             "flop_convention": "traced step: torch FlopCounterMode formulas over forward+backward (2 FLOPs per "
                                "multiply-add; checkpoint recompute excluded) + attention analytically (QK^T and "
                                "PV, causal not discounted)",
             "options": _model_options(args), "transformer": meta["transformer"]}
    precisions = sorted({m["precision"] for m in measurements})
    settings = {
        "warmup": 0, "steps": 1, "optimizer": args.optimizer, "optimizer_impl": args.optimizer_impl,
        "set_to_none": True, "grad_accum": 1, "activation_checkpointing": bool(args.checkpointing),
        "frozen_fraction": args.frozen_fraction,
        "adapter": _adapter_setting(adapter, precisions), "attention": args.attention,
        "lr": OPTIMIZER_OPTIONS[args.optimizer]["lr"], "optimizer_options": OPTIMIZER_OPTIONS[args.optimizer],
        "sharding": "none", "state_layout": "torch_amp", "sync_method": None, "emulates": emulates,
        "memory_breakdown": "as bench run measures it, on the traced live bytes: weights/grads/optimizer: storage "
                            "sizes; activations: live after forward minus before; transients: peak - static - "
                            "max(activations, grads), static = live after a full step (weights, optimizer state, "
                            "the batch)",
        "trace": {
            "method": "one training step on CPU FakeTensors (torch " + torch.__version__ + ") with a live-storage "
                      "tracker; optimizer state allocated before the step (steady state)",
            "cuda_behaviours": list(CUDA_BEHAVIOURS) if emulates == "cuda" else [],
            "still_differs": list(STILL_DIFFERS) if emulates == "cuda" else
            ["plain CPU semantics (--emulate cpu): a check of the tracer, not a CUDA prediction"],
            "notes": notes,
            "aten_ops": "measurements[].aten_ops: aten ops dispatched per phase (forward, backward incl. any "
                        "recompute, optimizer) that launch a kernel: views and bare allocations left out; a foreach "
                        "op counts once. The planner's launch term multiplies them by a per-op launch cost",
            "op_classes": "measurements[].op_classes: forward + backward (recompute included) by operator class "
                          "(matmul, attention, elementwise, embedding_loss): FLOPs (torch.utils.flop_counter), bytes "
                          "every kernel-launching op reads and writes (logical tensor sizes, so a broadcast input "
                          "counts in full and cache reuse is ignored: an upper bound on DRAM traffic) and op counts",
        },
        "command": command_line(args),
        "requested": requested(_split(args.precision, "--precision", str, PRECISIONS),
                               _split(args.batch, "--batch", _positive_int), steps=1, warmup=0),
    }
    # Written once, at the end: every requested point has a row (a failed trace is a row with status error).
    return {"schema": SCHEMA, "created_utc": created, "partial": False, "environment": _environment(),
            "model": model, "settings": settings, "missing": [], "warnings": [], "measurements": measurements}


def _summary(doc: dict) -> str:
    lines = [f"{doc['model']['name']}: {doc['model']['params']:,} params "
             f"({doc['model']['trainable_params']:,} trainable), traced, emulates {doc['settings']['emulates']}"]
    for m in doc["measurements"]:
        head = f"  {m['precision']:>4} batch {m['batch_size']:>4}: "
        if m["status"] != "ok":
            lines.append(head + f"{m['status']}: {m['reason']}")
            continue
        parts = ", ".join(f"{k} {_size(v)}" for k, v in m["memory_breakdown_bytes"].items())
        lines.append(head + f"peak {_size(m['peak_allocated_bytes'])} ({parts}); static {_size(m['static_bytes'])}")
    return "\n".join(lines)


def _size(n: float) -> str:
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / 2**20:.1f} MiB"


def main(args) -> int:
    """Run `bench trace` for parsed arguments; 0 ok, 2 bad input or untraceable model, 1 internal error. With the
    app's event stream (args.events) each outcome is also an event whose key says what happened."""
    from bench.trace_core import UntraceableModelError

    events = getattr(args, "events", None)

    def failed(code: int, key: str, text: str, **params) -> int:
        print(text, file=sys.stderr)
        if events is not None:
            events.error(key, text.removeprefix("error: "), **params)
        return code

    try:
        if events is not None and args.out == "-":
            raise InputError("--out", None, "-", "a results folder with --events json (the stream is stdout)")
        doc, code = run_traces(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if events is not None:
            events.bad_input(exc)
        return 2
    except UntraceableModelError as exc:
        return failed(2, "untraceable_model", f"error: {exc.message(args.model)}", model=args.model)
    except ModuleNotFoundError as exc:
        if exc.name not in ("torch", "yaml"):
            raise
        return failed(2, "missing_module", f"bench trace: this Python has no {exc.name} ({sys.executable}). "
                      "Install what bench needs with `pip install -r requirements.txt` (torch==2.13.0 is pinned; "
                      "see the README).", module=exc.name, python=sys.executable)
    except Exception as exc:  # noqa: BLE001 - an internal error: the traceback for a bug report, then exit 1
        traceback.print_exc()
        return failed(1, "internal", f"internal error: {type(exc).__name__}: {exc}", type=type(exc).__name__)
    if doc is None:
        return failed(code, "all_failed", "error: every traced configuration failed (see above)")
    if args.out == "-":
        print(json.dumps(doc, indent=1))
        print(_summary(doc), file=sys.stderr)
        return code
    path = write_result_atomic(doc, result_path(args.out, "traced", doc["model"]["name"], doc["created_utc"]))
    if events is not None:
        print(_summary(doc), file=sys.stderr)
        events.emit("done", path=str(path), summary=_summary(doc),
                    failed=sum(m["status"] != "ok" for m in doc["measurements"]))
        return code
    print(_summary(doc))
    print(f"wrote {path}")
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench trace", description=__doc__)
    add_arguments(parser)
    return parser


def cli(argv: list[str] | None = None) -> int:
    """`python -m bench.trace ARGS` (the same as `python -m bench trace ARGS`, `--events json` included)."""
    from bench.events import from_argv

    argv = list(sys.argv[1:] if argv is None else argv)
    rest, events = from_argv(argv)
    args = build_parser().parse_args(rest)
    args.argv = [sys.executable, "-m", "bench.trace", *argv]  # result files record it (settings.command)
    args.events = events
    return main(args)


# --- for callers that must survive a tracer crash (the app) -------------------------------------------------------
def trace_in_subprocess(argv: list[str], timeout_s: float) -> tuple[int, str, str]:
    """Run `python -m bench.trace ARGV` in a child process: (returncode, stdout, stderr). A crash, a hang past
    `timeout_s` (returncode 124) or a missing torch never raises here. Imports no torch."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.trace", *argv], capture_output=True, text=True,
                              timeout=timeout_s, cwd=REPO_ROOT, env=env)
    except subprocess.TimeoutExpired as exc:
        return 124, _text(exc.stdout), _text(exc.stderr) + f"\nbench trace: timed out after {timeout_s:g} s\n"
    except OSError as exc:
        return 127, "", f"bench trace: could not start {sys.executable}: {exc}\n"
    stderr = proc.stderr
    if proc.returncode < 0:
        stderr += f"\nbench trace: the tracer died from signal {-proc.returncode}\n"
    return proc.returncode, proc.stdout, stderr


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


if __name__ == "__main__":
    raise SystemExit(cli())
