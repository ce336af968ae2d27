"""Planner speed: plan every profile x 4 precisions x GPU counts {1..64} for the ResNet-50 scenario; CLI end to end.

Three figures, because the plan memo (planner/engine/memo.py) keeps what a what-if leaves alone: from scratch (the
memo emptied before each plan: a new model or training set-up), the same scenario again (everything reused) and a
what-if that changes the epochs (the memory search and step times reused, convergence and cost redone).
Targets (issue 3): < 100 ms per plan after profiles are loaded (the what-if); `python -m planner` end to end < 1.5 s.
Prints medians over repeated runs (the machines are shared and noisy: compare medians, not single runs).
"""

from __future__ import annotations

import dataclasses
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.engine import memo  # noqa: E402
from planner.engine.plan import build_plan  # noqa: E402
from planner.inputs.folders import load_inputs  # noqa: E402
from planner.inputs.scenario import load_scenario_file  # noqa: E402


def main() -> None:
    inputs = load_inputs(include_user_data=False)
    s = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml")
    counts = (1, 2, 4, 8, 16, 32, 64)
    s = dataclasses.replace(s, training=dataclasses.replace(s.training, global_batch=1024),
                            hardware=dataclasses.replace(s.hardware, gpus=None, gpu_counts=counts))
    scratch_ms, again_ms, what_if_ms = [], [], []
    for i in range(9):
        memo.clear()
        t0 = time.perf_counter()
        plan = build_plan(s, inputs)
        scratch_ms.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        build_plan(s, inputs)
        again_ms.append((time.perf_counter() - t0) * 1e3)
        other = dataclasses.replace(s, workload=dataclasses.replace(s.workload, epochs=s.workload.epochs + i + 1))
        t0 = time.perf_counter()
        build_plan(other, inputs)
        what_if_ms.append((time.perf_counter() - t0) * 1e3)
    print(f"options per plan: {len(plan.options)} ({len(inputs.profiles)} profiles x 4 precisions x {len(counts)} counts)")
    for name, ms in (("from scratch (memo emptied)", scratch_ms), ("the same scenario again", again_ms),
                     ("what-if: epochs changed", what_if_ms)):
        print(f"build_plan {name:30} median {statistics.median(ms):6.1f} ms (min {min(ms):.1f}, max {max(ms):.1f})")
    print(f"per option from scratch: {statistics.median(scratch_ms) / len(plan.options):.3f} ms; "
          f"what-if target < 100 ms: {'met' if statistics.median(what_if_ms) < 100 else 'MISSED'}")
    cli_s = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "planner", "scenarios/resnet50-imagenet.yaml", "--no-user-data"],
                       cwd=ROOT, check=True, capture_output=True)
        cli_s.append(time.perf_counter() - t0)
    print(f"python -m planner end to end median {statistics.median(cli_s):.2f} s target < 1.5 s")


if __name__ == "__main__":
    main()
