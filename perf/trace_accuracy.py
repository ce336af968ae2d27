"""Accuracy of `bench trace`: traced vs a real CPU step, and traced vs the planner's transformer formulas.

1. CPU (independent reference): the tracer with plain CPU semantics (--emulate cpu, fp32) against a real CPU step of
   the same model, measured by torch.profiler's memory timeline (allocator events + pre-existing tensors); the
   activation part is cross-checked against the bytes the real step saved for backward (saved_tensors_hooks).
2. Formulas: the CUDA-emulating trace against the planner's formula estimate (planner.engine.memory.estimate_memory's
   allocated_peak without workspace: states + the larger of the start of backward and the optimizer step,
   Korthikanti et al. 2022), with fused (SDPA) and eager attention (`bench trace --attention eager`).
3. CUDA (on a GPU machine only): the CUDA-emulating trace + the planner's workspace term vs max_memory_allocated.

Run: .venv/bin/python perf/trace_accuracy.py [--part cpu|formula|cuda]   (Markdown tables; a few minutes)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch.profiler._memory_profiler import MemoryProfileTimeline  # noqa: E402

from bench import zoo  # noqa: E402
from bench.models_transformer import Attention  # noqa: E402
from bench.trace_core import StepPlan, run_traced_step  # noqa: E402
from bench.trace_model import make_optimizer_factory, make_preparer  # noqa: E402

MIB = 2**20
CPU_CASES = [("mlp", {}, (64, 512)), ("resnet18", {}, (2, 8)), ("gpt2", {"seq_len": 128}, (2, 8))]
FORMULA_CASES = [("gpt2", {}, (1, 8)), ("bert_base", {"seq_len": 512}, (8, 32)), ("llama", {"preset": "7b"}, (1, 8))]


def trace(model: str, options: dict, batch: int, precision: str = "fp32", emulate_cuda: bool = False,
          checkpointing: bool = False, attention: str = "sdpa"):
    def build():
        wl = zoo.build(model, device="meta", **options)
        for m in wl.model.modules():
            if isinstance(m, Attention):
                m.impl = attention
        return wl.model, wl.make_batch, wl.loss_fn

    plan = StepPlan(build=build, prepare=make_preparer(frozen_fraction=0.0, adapter=None, precision=precision,
                                                       checkpointing=checkpointing),
                    make_optimizer=make_optimizer_factory("adamw", "foreach"), batch_size=batch,
                    autocast_dtype={"fp32": None, "bf16": torch.bfloat16}[precision], grad_scaler=False,
                    emulate_cuda=emulate_cuda)
    return run_traced_step(plan)


def real_cpu_step(model: str, options: dict, batch: int) -> tuple[int, int]:
    """(peak bytes of one steady-state step from the profiler's memory timeline, bytes saved for backward)."""
    torch.manual_seed(0)
    wl = zoo.build(model, device="cpu", **options)
    net = wl.model.train()
    params = [p for p in net.parameters() if p.requires_grad]
    opt = make_optimizer_factory("adamw", "foreach")(params)
    for p in params:  # the tracer's steady state: optimizer state exists before the step
        p.grad = torch.zeros_like(p)
    opt.step()
    opt.zero_grad(set_to_none=True)
    param_storages = {p.untyped_storage().data_ptr() for p in net.parameters()}
    saved: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in param_storages:
            saved[st.data_ptr()] = st.nbytes()
        return t

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        batch_t = wl.make_batch(batch, torch.device("cpu"))
        # the batch exists before forward: the trace counts it in static_bytes, not in activations
        param_storages.update(t.untyped_storage().data_ptr() for t in batch_t)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = wl.loss_fn(net, batch_t)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del loss, batch_t
    _times, sizes = MemoryProfileTimeline(prof._memory_profile())._coalesce_timeline("cpu")
    return int(np.asarray(sizes).sum(axis=1).max()), sum(saved.values())


def formula_peak(model: str, options: dict, batch: int, precision: str, attention: str) -> float:
    """The planner's formula estimate of max_memory_allocated without workspace (what a trace should reproduce):
    allocated_peak of estimate_memory on the zoo's shape (its dropout and norm), at the trace's attention."""
    from planner.engine.estimates import ResolvedModel
    from planner.engine.memory import estimate_memory
    from planner.engine.models import shape_from_dict
    from planner.engine.option import OptionPlan
    from planner.inputs.profiles import DEFAULT_PROFILES_DIR, load_profile
    from planner.inputs.scenario import TrainingSetup

    entry = zoo.describe(model, **options)
    shape = shape_from_dict(entry.transformer)
    resolved = ResolvedModel(name=model, family=entry.family, params=entry.params, transformer=shape,
                             seq_len=shape.seq_len if shape else None, attention=attention)
    # Any GPU: only allocated bytes are compared (no workspace), never the fit.
    gpu = load_profile(DEFAULT_PROFILES_DIR / "h100-sxm-80gb.yaml")
    est = estimate_memory(resolved, TrainingSetup(global_batch=batch), OptionPlan(gpu, 1, precision, micro_batch=batch),
                          workspace_gib=0.0, context_gib=0.0)
    return est.allocated_peak


def cpu_table() -> None:
    print("### Traced (plain CPU semantics, fp32) vs a real CPU step\n")
    print("| model | batch | traced peak MiB | real peak MiB (profiler) | diff | traced activations MiB "
          "| real saved-for-backward MiB | diff | trace s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model, options, batches in CPU_CASES:
        for b in batches:
            t0 = time.perf_counter()
            traced = trace(model, options, b)
            seconds = time.perf_counter() - t0
            real_peak, real_saved = real_cpu_step(model, options, b)
            name = model + (f" (s={options['seq_len']})" if "seq_len" in options else "")
            print(f"| {name} | {b} | {traced.peak_bytes / MIB:.1f} | {real_peak / MIB:.1f} | "
                  f"{(traced.peak_bytes - real_peak) / real_peak:+.2%} | {traced.activations_bytes / MIB:.1f} | "
                  f"{real_saved / MIB:.1f} | {(traced.activations_bytes - real_saved) / real_saved:+.2%} | "
                  f"{seconds:.2f} |")
    print()


def formula_table() -> None:
    print("### Traced (CUDA emulation) vs the planner's formulas (Korthikanti et al. 2022 + docs/methods.md#memory)\n")
    print("| model | attention | precision | batch | traced peak MiB | formula allocated peak MiB | "
          "formula − traced |")
    print("|---|---|---|---|---|---|---|")
    for model, options, batches in FORMULA_CASES:
        for attention in ("sdpa", "eager"):
            for precision in ("fp32", "bf16"):
                for b in batches:
                    traced = trace(model, options, b, precision, emulate_cuda=True, attention=attention)
                    planner = formula_peak(model, options, b, precision, attention)
                    seq = zoo.describe(model, **options).seq_len
                    print(f"| {model} (s={seq}) | {attention} | {precision} | {b} | {traced.peak_bytes / MIB:.0f} "
                          f"| {planner / MIB:.0f} | {(planner - traced.peak_bytes) / traced.peak_bytes:+.1%} |")
    print()


def real_cuda_step(model: str, options: dict, batch: int, precision: str) -> int:
    """max_memory_allocated of one steady-state step on CUDA (AdamW foreach, set_to_none, batch made first)."""
    torch.manual_seed(0)
    device = torch.device("cuda")
    wl = zoo.build(model, device=device, **options)
    net = wl.model.train()
    opt = make_optimizer_factory("adamw", "foreach")([p for p in net.parameters() if p.requires_grad])
    batch_t = wl.make_batch(batch, device)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16")

    def step():
        with autocast:
            loss = wl.loss_fn(net, batch_t)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()


def cuda_table() -> None:
    """Issue 8's CUDA check (run it on a GPU machine, ~2-3 minutes): traced (+ the planner's workspace term) vs
    torch.cuda.max_memory_allocated, resnet50 / gpt2 / bert_base x 3 batch sizes x fp32, bf16."""
    from planner.engine.memory import workspace_bytes

    if not torch.cuda.is_available():
        print("### CUDA check: skipped (no CUDA device)\n")
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    major, minor = torch.cuda.get_device_capability()
    print(f"### Traced vs max_memory_allocated on {torch.cuda.get_device_name()} (sm{major}{minor})\n")
    print("| model | precision | batch | traced MiB | + workspace MiB | measured MiB | diff (traced + ws) |")
    print("|---|---|---|---|---|---|---|")
    cases = [("resnet50", {}, (32, 64, 128)), ("gpt2", {}, (4, 8, 16)), ("bert_base", {"seq_len": 512}, (16, 32, 64))]
    for model, options, batches in cases:
        ws = workspace_bytes(zoo.describe(model, **options).family, f"{major}.{minor}")
        for precision in ("fp32", "bf16"):
            for b in batches:
                traced = trace(model, options, b, precision, emulate_cuda=True).peak_bytes
                measured = real_cuda_step(model, options, b, precision)
                torch.cuda.empty_cache()  # the step's model and optimizer died with real_cuda_step's frame
                print(f"| {model} | {precision} | {b} | {traced / MIB:.0f} | {(traced + ws) / MIB:.0f} | "
                      f"{measured / MIB:.0f} | {(traced + ws - measured) / measured:+.1%} |")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("cpu", "formula", "cuda", "all"), default="all")
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads\n")
    if args.part in ("cpu", "all"):
        cpu_table()
    if args.part in ("formula", "all"):
        formula_table()
    if args.part in ("cuda", "all"):
        cuda_table()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
