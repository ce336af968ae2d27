"""Fit growth: the activation-line and step-time-line fits (and a whole plan) on n and 2n synthetic measurements.

Prints the best and median wall seconds at n and 2n and their ratios: about 2 when the work grows linearly with
the number of measurements, about 4 when it grows quadratically (issue 12: a 13 MB result file took 19 s to plan).

    python perf/fit_growth.py [--n 4000] [--repeats 5] [--plan-n 3000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.engine import steptime  # noqa: E402
from planner.engine.estimates import Source, TimePoint  # noqa: E402
from planner.engine.memory import fit_activation_line  # noqa: E402

GPU = "h100-sxm-80gb"
TODAY = dt.date(2026, 12, 1)


def synthetic_peaks(n: int, seed: int = 0) -> list[tuple[int, float]]:
    """n peaks at batch sizes 1..n: flat at the optimizer step (13.5 GB) until the activation line (12 GB +
    0.5 GB per sample) rises above it, with ±0.1% noise, as a long `bench run --batch` sweep would record."""
    rng = random.Random(seed)
    return [(b, max(13.5e9, 12e9 + 0.5e9 * b) * (1 + 1e-3 * (rng.random() - 0.5))) for b in range(1, n + 1)]


def synthetic_times(n: int, seed: int = 0) -> list[TimePoint]:
    """n step times at even batch sizes 2..2n: t = 4 ms + 0.5 ms per sample, ±1% noise."""
    rng = random.Random(seed)
    return [TimePoint(2 * i, (0.004 + 0.0005 * 2 * i) * (1 + 0.01 * (rng.random() - 0.5)), "synthetic")
            for i in range(1, n + 1)]


def best_and_median(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(best, median) wall seconds of `repeats` calls."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def fit_activation(points: list[tuple[int, float]]) -> object:
    return fit_activation_line(points, 1e9, "bf16", Source("measured"))


def fit_time(points: list[TimePoint]) -> object:
    # An odd batch between the measured even ones: the interpolated path (line fit + residual band).
    return steptime.measured_micro_step(points, len(points) + 1)


def result_file(n: int, seed: int = 0) -> dict:
    """A schema-valid bench result file with n measurements on one GPU, batch sizes 1..n (≈ 1 kB each)."""
    rng = random.Random(seed)
    rows = []
    for b in range(1, n + 1):
        t = (0.004 + 0.0005 * b) * (1 + 0.01 * (rng.random() - 0.5))
        rows.append({
            "source": "measured", "precision": "bf16", "batch_size": b, "status": "ok", "reason": None,
            "step_time_s": {"median": t, "p10": t * 0.99, "p90": t * 1.01, "mean": t, "std": t * 0.01, "n": 20},
            "phases_s": {"forward": t / 3, "backward": 2 * t / 3 * 0.9, "optimizer": t / 30},
            "samples_per_s": b / t, "peak_allocated_bytes": max(1.5e9, 0.9e9 + 75e6 * b),
            "peak_reserved_bytes": max(1.6e9, 1e9 + 75e6 * b), "static_bytes": 4e8,
            "first_step_peak_bytes": None, "device_used_bytes": None, "memory_breakdown_bytes": {},
            "achieved_tflops": None, "mfu": None, "mfu_peak_key": "bf16", "gpu_util_pct": 97.0, "power_w": 600.0,
            "energy_j_per_step": None, "loss_finite": True, "grad_scaler_skips": 0,
            "unmeasured": {"device_used_bytes": "synthetic"},
        })
    return {
        "schema": "trainplan.bench/1", "created_utc": "2026-11-20T10:00:00Z", "partial": False,
        "environment": {"device": "cuda", "hostname": "synthetic", "gpu_name": GPU, "gpu_profile_id": GPU,
                        "gpu_count": 1, "torch": "2.11.0", "python": "3.12", "nvml_available": True},
        "model": {"name": "resnet50", "family": "cnn", "params": 25557032, "trainable_params": 25557032,
                  "input_desc": "3x224x224", "flops_per_sample": 2.46e10, "flop_convention": "synthetic"},
        "settings": {"warmup": 5, "steps": 20, "optimizer": "sgd_momentum", "optimizer_impl": "foreach",
                     "activation_checkpointing": False, "frozen_fraction": 0.0, "adapter": None,
                     "sharding": "none", "state_layout": "torch_amp"},
        "measurements": rows, "max_batch": [], "dataloader": [], "ddp": None,
    }


def plan_seconds(n: int, repeats: int) -> tuple[float, float, float]:
    """(MB of the file, best load seconds, best plan seconds) for resnet50 on two GPUs with an n-measurement
    file: one GPU measured, the other transferred from it."""
    from planner.engine.plan import build_plan
    from planner.inputs.folders import load_inputs
    from planner.inputs.scenario import parse_scenario

    scenario = parse_scenario({
        "schema": "trainplan.scenario/1", "name": "fit growth",
        "model": {"name": "resnet50"}, "training": {"global_batch": 1024, "precisions": ["bf16"]},
        "workload": {"dataset_samples": 1281167, "epochs": 90},
        "hardware": {"gpus": [GPU, "a100-sxm-80gb"], "gpu_counts": [1, 8]},
    }, "<fit growth>")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / GPU
        folder.mkdir()
        path = folder / "resnet50-20261120T100000Z.json"
        path.write_text(json.dumps(result_file(n)), encoding="utf-8")
        size_mb = path.stat().st_size / 1e6
        load_best, _ = best_and_median(lambda: load_inputs([tmp], None, include_user_data=False), repeats)
        inputs = load_inputs([tmp], None, include_user_data=False)
        plan_best, _ = best_and_median(lambda: build_plan(scenario, inputs, today=TODAY), repeats)
    return size_mb, load_best, plan_best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4000, help="measurements in the smaller input (default 4000)")
    p.add_argument("--repeats", type=int, default=5, help="runs per size; best and median are printed")
    p.add_argument("--plan-n", type=int, default=3000,
                   help="measurements in the smaller result file for the whole-plan row (0: skip it)")
    args = p.parse_args(argv)
    n, r = args.n, args.repeats
    print(f"Fit growth, n = {n} and 2n = {2 * n} synthetic measurements, {r} runs each (seconds):")
    print(f"  {'what':28} {'best n':>9} {'best 2n':>9} {'ratio':>6}   {'median n':>9} {'median 2n':>9} {'ratio':>6}")
    for name, make, fit in (("activation line (memory)", synthetic_peaks, fit_activation),
                            ("step-time line (steptime)", synthetic_times, fit_time)):
        small, large = make(n), make(2 * n)
        best_n, med_n = best_and_median(lambda f=fit, pts=small: f(pts), r)
        best_2n, med_2n = best_and_median(lambda f=fit, pts=large: f(pts), r)
        print(f"  {name:28} {best_n:9.4f} {best_2n:9.4f} {best_2n / best_n:6.2f}   {med_n:9.4f} {med_2n:9.4f} "
              f"{med_2n / med_n:6.2f}")
    if args.plan_n:
        m = args.plan_n
        mb_n, load_n, plan_n = plan_seconds(m, max(1, r // 2))
        mb_2n, load_2n, plan_2n = plan_seconds(2 * m, max(1, r // 2))
        print(f"\nWhole plan (resnet50, 2 GPUs x 1 and 8, bf16) with one result file of {m} / {2 * m} "
              f"measurements ({mb_n:.1f} / {mb_2n:.1f} MB), best of {max(1, r // 2)}:")
        print(f"  load inputs   {load_n:8.3f} s  {load_2n:8.3f} s  ratio {load_2n / load_n:5.2f}")
        print(f"  build plan    {plan_n:8.3f} s  {plan_2n:8.3f} s  ratio {plan_2n / plan_n:5.2f}")
    print("\nA ratio near 2 is linear growth; near 4, quadratic. On a busy shared machine trust the best-of ratios.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
