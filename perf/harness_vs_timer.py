"""Harness accuracy and max-batch search cost: (1) the harness's median step time vs torch.utils.benchmark.Timer
for the same step, ratio from one run; (2) trials used by fit-predict-confirm vs doubling + bisection from 1.

    python perf/harness_vs_timer.py [--device cpu|cuda] [--model small_cnn] [--batch 32] [--precision fp32]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

GiB, MiB = 2**30, 2**20
# Fake memory models: (name, base bytes, bytes per sample, capacity, optimizer-step plateau bytes).
MEMORY_CASES = (
    ("resnet50-like, 139 GiB", 0.4 * GiB, 75 * MiB, 139 * GiB, 0.5 * GiB),
    ("gpt2-like, 139 GiB", 2.5 * GiB, 1.3 * GiB, 139 * GiB, 2.6 * GiB),
    ("bert-like, 79.6 GiB", 1.8 * GiB, 160 * MiB, 79.6 * GiB, 2.0 * GiB),
    ("big model, small max, 79.6 GiB", 60 * GiB, 3 * GiB, 79.6 * GiB, 70 * GiB),
    ("plateau then linear, 16 GiB", 1 * GiB, 10 * MiB, 16 * GiB, 8 * GiB),
    ("linear, 24 GiB", 1 * GiB, 20 * MiB, 24 * GiB, 0.0),
)


def timing(args) -> dict:
    import torch
    from torch.utils import benchmark

    from bench import harness, zoo
    from bench.precision import plan_for

    device = harness.CudaDevice() if args.device == "cuda" else harness.CpuDevice()
    if args.threads and device.kind == "cpu":
        torch.set_num_threads(args.threads)  # one thread: a busy shared box descheduling a worker skews both
    torch.manual_seed(0)
    workload = zoo.build(args.model, device=device.torch_device)
    plan = plan_for(args.precision, device.kind)

    def make_optimizer(params):
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)

    config = harness.HarnessConfig(warmup=args.warmup, steps=args.steps, phase_steps=0)
    batch = workload.make_batch(args.batch, device.torch_device)
    finite = torch.ones((), dtype=torch.bool, device=device.torch_device)
    optimizer = make_optimizer(list(workload.model.parameters()))
    step = harness.make_step(workload, plan, optimizer, plan.make_scaler(), batch, finite)
    # CPU kernels (oneDNN primitive caches, allocator) take seconds to settle: warm up by time, not by count.
    t_end = time.perf_counter() + args.warmup_s
    while time.perf_counter() < t_end:
        step()
    device.synchronize()
    h_medians, t_medians = [], []
    def run_harness() -> None:
        raw = harness.measure(workload, plan, args.batch, make_optimizer, config, device)
        h_medians.append(statistics.median(raw.step_times_s))

    def run_timer() -> None:
        timer = benchmark.Timer(stmt="step()", globals={"step": step}, num_threads=torch.get_num_threads())
        t_medians.append(timer.blocked_autorange(min_run_time=args.min_run_time).median)

    for r in range(args.repeats):  # interleaved, order alternating, so drift and position hit both alike
        for run in ((run_harness, run_timer) if r % 2 == 0 else (run_timer, run_harness)):
            run()
    h, t = statistics.median(h_medians), statistics.median(t_medians)
    ratios = [a / b for a, b in zip(h_medians, t_medians, strict=True)]
    return {"ratio_per_repeat_median": statistics.median(ratios), "device": device.kind, "model": args.model, "batch": args.batch, "precision": args.precision,
            "steps": args.steps, "repeats": args.repeats, "harness_median_s": h, "timer_median_s": t,
            "ratio": h / t, "harness_medians_s": h_medians, "timer_medians_s": t_medians}


def doubling_bisection(try_batch: Callable, tol: float = 0.01, limit: int = 65536):
    """The usual search, the baseline bench's fit-predict-confirm is measured against (Lightning's 'binsearch'
    mode): double from 1 until a failure, then bisect down to the tolerance (adjacent sizes or 1%)."""
    from bench.maxbatch import OK, MaxBatchResult

    trials = []
    lo, hi, b = 0, None, 1
    while b <= limit:
        t = try_batch(b)
        trials.append(t)
        if t.status != OK:
            hi = b
            break
        lo, b = b, b * 2
    if hi is None:
        return MaxBatchResult(lo, tuple(trials), False, f"reached the search limit of {limit}")
    while hi - lo > max(1, math.ceil(tol * lo)):
        mid = (lo + hi) // 2
        t = try_batch(mid)
        trials.append(t)
        if t.status == OK:
            lo = mid
        else:
            hi = mid
    return MaxBatchResult(lo, tuple(trials), True)


def trial_counts() -> list[dict]:
    from bench.maxbatch import find_max_batch
    from bench.testing import FakeMemory

    rows = []
    for name, base, per_sample, capacity, step in MEMORY_CASES:
        ours_mem = FakeMemory(base, per_sample, capacity, step_bytes=step)
        ours = find_max_batch(ours_mem, capacity)
        base_mem = FakeMemory(base, per_sample, capacity, step_bytes=step)
        dbl = doubling_bisection(base_mem)
        rows.append({"case": name, "true_max": ours_mem.true_max(), "fit_predict_confirm": ours.max_batch,
                     "fit_trials": len(ours.trials), "doubling_bisection": dbl.max_batch,
                     "doubling_trials": len(dbl.trials)})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--model", default="small_cnn")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--repeats", type=int, default=6)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (0 = leave torch's default)")
    p.add_argument("--warmup-s", type=float, default=3.0, help="untimed steps for this long before measuring")
    p.add_argument("--min-run-time", type=float, default=0.5, help="Timer.blocked_autorange budget per repeat (s)")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = p.parse_args(argv)

    t = timing(args)
    print(f"Step time, {t['model']} batch {t['batch']} {t['precision']} on {t['device']} "
          f"({args.threads or 'default'} CPU thread(s)) "
          f"({t['repeats']} interleaved repeats, medians):")
    print(f"  harness median   {t['harness_median_s'] * 1000:9.3f} ms  ({t['steps']} timed steps per repeat)")
    print(f"  Timer median     {t['timer_median_s'] * 1000:9.3f} ms  (blocked_autorange)")
    print(f"  ratio harness/Timer = {t['ratio']:.4f}  ({(t['ratio'] - 1) * 100:+.2f}%); median of per-repeat "
          f"ratios {t['ratio_per_repeat_median']:.4f}")
    print("  per repeat (ms): harness " + ", ".join(f"{v * 1000:.2f}" for v in t["harness_medians_s"])
          + " | Timer " + ", ".join(f"{v * 1000:.2f}" for v in t["timer_medians_s"]))
    rows = trial_counts()
    print("\nMax-batch search, fake linear memory model (2 MiB allocator rounding), tolerance 1%:")
    print(f"  {'case':34} {'true':>6} {'ours':>6} {'trials':>6} {'dbl+bis':>7} {'trials':>6}")
    for r in rows:
        print(f"  {r['case']:34} {r['true_max']:>6} {r['fit_predict_confirm']:>6} {r['fit_trials']:>6} "
              f"{r['doubling_bisection']:>7} {r['doubling_trials']:>6}")
    ours, dbl = sum(r["fit_trials"] for r in rows), sum(r["doubling_trials"] for r in rows)
    print(f"  total trials: fit-predict-confirm {ours}, doubling + bisection {dbl}")
    if args.json:
        Path(args.json).write_text(json.dumps({"timing": t, "max_batch": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
